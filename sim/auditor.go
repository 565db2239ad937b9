package sim

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/linearizability"
)

// AuditSpec configures the auditor (auditor.go): a client that sends, now and then,
// each request the other clients do not, in the stale and hostile forms real clients
// produce, and checks every answer it can check.
type AuditSpec struct {
	On      bool
	EveryMs int64 // mean time between requests
	// FreshTrimChance: per step, an acks=1 write and at once a DeleteRecords up to its
	// end, which may lie above the high-water mark while its fsync runs (widen.go).
	FreshTrimChance float64
}

// auditor exercises the APIs and request forms the workload clients leave out:
// DescribeConfigs (checked against the alterations it made), AlterConfigs and
// IncrementalAlterConfigs, ListOffsets by timestamp and max timestamp (checked),
// OffsetForLeaderEpoch, Fetch and ListOffsets with stale or future leader epochs and
// unknown fetch sessions (no records may come back), DeleteRecords (checked: the new
// log start is where asked), CreatePartitions that would shrink a topic, DescribeCluster,
// ListGroups and DescribeGroups, zombie Heartbeat/SyncGroup/LeaveGroup/OffsetCommit
// for members that do not exist (never accepted), its own groups' commits, OffsetDelete
// and DeleteGroups (checked by reading the offsets back), and malformed or oversized
// produces (never accepted). It touches no data or group another client checks except
// by DeleteRecords, which the checkers treat as retention.
type auditor struct {
	clientBase
	spec     AuditSpec
	topics   []string
	parts    map[string]int32
	busyReq  bool
	draining bool
	// expect is the index.interval.bytes value each topic must show, set by this
	// client's last acknowledged alteration ("" unknown: an outcome was not learnt or
	// another client may change it), with the deletions seen when it was set.
	expect  map[string]string
	expDels map[string]int
	// lost marks topics with an alteration whose outcome was never learnt: it may
	// still arrive and apply after a later one, so their configs are not checked again.
	lost    map[string]bool
	hwm     map[core.TopicPartition]int64 // last high-water mark seen, per partition
	hwmDels map[core.TopicPartition]int   // deletions of its topic when it was seen
	grp     auditGroup
	members map[string][]string // member ids of each consumer group, from DescribeGroups
	deletes []DeleteRecordsCall
	trimOK  bool  // its own topic for freshTrim (auditor_trim.go) exists
	trimEnd int64 // that topic's log end after its last acknowledged write
}

// DeleteRecordsCall is one DeleteRecords partition the auditor sent: a log start
// offset a retention checker must allow. Offset -1 means the high-water mark when the
// broker handled it; Done is false while the answer is unknown (it may still apply).
type DeleteRecordsCall struct {
	TP           core.TopicPartition
	Offset       int64
	Sent, Return int64 // virtual ns
	Done         bool
	Code         int16
	LowWatermark int64
}

// deleteRecordsCalls lists every DeleteRecords partition sent in the run, in sending
// order, for checkers of the log start offset.
func (w *World) deleteRecordsCalls() []DeleteRecordsCall {
	for _, c := range w.clients {
		if a, ok := c.(*auditor); ok {
			return a.deletes
		}
	}
	return nil
}

func newAuditor(w *World, actor int32) *auditor {
	a := &auditor{spec: w.cfg.Audit, parts: map[string]int32{}, expect: map[string]string{},
		expDels: map[string]int{}, hwm: map[core.TopicPartition]int64{},
		hwmDels: map[core.TopicPartition]int{},
		members: map[string][]string{}, lost: map[string]bool{}}
	a.clientBase = newClientBase(w, actor, "auditor", a.pump)
	// Partition counts come from Metadata answers only: a producer's auto-creation
	// may have created a topic with fewer partitions than the admin asked for.
	for _, t := range w.cfg.Topics {
		a.topics = append(a.topics, t.Name)
	}
	return a
}

func (a *auditor) start() { a.wakeIn(a.rnd.Between(100, 500) * ms) }
func (a *auditor) heal()  { a.draining = true }

// busy holds the final read back while a request is in flight: the auditor writes
// (acks=1 fresh trims, zombie batches) and may see them acknowledged after the heal.
func (a *auditor) busy() string {
	if a.busyReq {
		return a.name + " has a request in flight"
	}
	return ""
}
func (a *auditor) timeout() int64 { return 2000 }

// sendAt sends req at version v (clamped to what the client may speak).
func (a *auditor) sendAt(req kmsg.Request, v int16, done func(kmsg.Response, error)) {
	key := req.Key()
	old := a.vers[key]
	if r, ok := versionRange(key); ok {
		a.vers[key] = max(min(v, r[1]), r[0])
	}
	a.send(req, a.timeout(), done)
	a.vers[key] = old
}

func (a *auditor) pump() {
	if a.backingOff() || a.busyReq || a.draining || len(a.topics) == 0 {
		return
	}
	a.busyReq = true
	if len(a.parts) == 0 {
		a.metadata()
		return
	}
	if a.spec.FreshTrimChance > 0 && a.rnd.Chance(a.spec.FreshTrimChance) {
		a.freshTrim()
		return
	}
	ops := []func(){a.describeConfigs, a.alterIncremental, a.alterLegacy, a.listByTime,
		a.staleFetch, a.staleListOffsets, a.epochEnd, a.deleteRecords, a.shrinkPartitions,
		a.describeCluster, a.listGroups, a.describeGroups, a.zombie, a.groupStep,
		a.badProduce, a.metadata, a.hostileJoin, a.staleMember, a.zombieProducer,
		a.malformed}
	ops[a.rnd.Intn(len(ops))]()
}

// next ends one request and schedules the next.
func (a *auditor) next(err error) {
	a.busyReq = false
	if err != nil {
		a.wakeIn(100 * ms)
		return
	}
	a.wakeIn(a.rnd.Exp(5*ms, a.spec.EveryMs*ms))
}

func (a *auditor) failf(format string, args ...any) {
	a.w.fail("audit", format, args...)
}

func (a *auditor) topic() string { return a.topics[a.rnd.Intn(len(a.topics))] }

func (a *auditor) tp() core.TopicPartition {
	t := a.topic()
	return core.TopicPartition{Topic: t, Partition: int32(a.rnd.Intn(int(max(a.parts[t], 1))))}
}

// deletions is how many deletions of topic the broker has applied so far.
func (a *auditor) deletions(topic string) int { return a.w.deleted[topic] }

func (a *auditor) metadata() {
	a.requestMetadata(a.topics, a.timeout(), func(counts map[string]int32, err error) {
		for t, n := range counts {
			a.parts[t] = max(a.parts[t], n)
		}
		a.next(err)
	})
}

// describeConfigs reads a topic's configs and checks the value this client set last.
func (a *auditor) describeConfigs() {
	topic := a.topic()
	want, dels := a.expect[topic], a.deletions(topic)
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	if a.rnd.Chance(0.5) {
		res.ConfigNames = []string{"index.interval.bytes", "retention.ms", "segment.bytes"}
	}
	req.Resources = append(req.Resources, res)
	req.IncludeSynonyms = a.rnd.Chance(0.5)
	if a.rnd.Chance(0.2) { // the broker resource, and one that is not this node
		b := kmsg.NewDescribeConfigsRequestResource()
		b.ResourceType, b.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
		if a.rnd.Chance(0.5) {
			b.ResourceName = "7"
		}
		req.Resources = append(req.Resources, b)
	}
	a.send(req, a.timeout(), func(r kmsg.Response, err error) {
		if err == nil {
			for _, rr := range r.(*kmsg.DescribeConfigsResponse).Resources {
				a.code("describe-configs", rr.ErrorCode)
				if rr.ResourceName != topic || rr.ErrorCode != 0 || want == "" || a.lost[topic] ||
					a.deletions(topic) != dels || a.expDels[topic] != dels {
					continue
				}
				for _, c := range rr.Configs {
					if c.Name == "index.interval.bytes" && (c.Value == nil || *c.Value != want) {
						a.failf("DescribeConfigs %s: index.interval.bytes=%v, but an "+
							"acknowledged alteration set %s", topic, strOrNil(c.Value), want)
					}
				}
			}
		}
		a.next(err)
	})
}

func strOrNil(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

// alterIncremental sets index.interval.bytes (harmless to the workload), sometimes
// validate-only, and remembers an acknowledged value.
func (a *auditor) alterIncremental() {
	topic := a.topic()
	value := strconv.Itoa(Pick(a.rnd, 0, 100, 4096))
	validate := a.rnd.Chance(0.25)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validate
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = "index.interval.bytes", kmsg.IncrementalAlterConfigOpSet, &value
	res.Configs = append(res.Configs, c)
	if a.rnd.Chance(0.15) { // an invalid value: the whole resource must be refused
		bad := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		bad.Name, bad.Op, bad.Value = "segment.bytes", kmsg.IncrementalAlterConfigOpSet,
			kmsg.StringPtr("-5")
		res.Configs = append(res.Configs, bad)
		validate = true // nothing may change
	}
	req.Resources = append(req.Resources, res)
	dels := a.deletions(topic)
	a.expect[topic] = "" // unknown until answered
	a.send(req, a.timeout(), func(r kmsg.Response, err error) {
		a.lost[topic] = a.lost[topic] || err != nil
		if err == nil {
			for _, rr := range r.(*kmsg.IncrementalAlterConfigsResponse).Resources {
				a.code("incremental-alter-configs", rr.ErrorCode)
				if rr.ErrorCode == 0 && !validate && a.deletions(topic) == dels {
					a.expect[topic], a.expDels[topic] = value, dels
				}
				if rr.ErrorCode == 0 && len(res.Configs) > 1 {
					a.failf("IncrementalAlterConfigs %s accepted segment.bytes=-5", topic)
				}
			}
		}
		a.next(err)
	})
}

// alterLegacy sends the old AlterConfigs, which replaces every override of the topic:
// for real only when no admin client changes configs (it is then the topic's drawn
// overrides plus index.interval.bytes), else validate-only.
func (a *auditor) alterLegacy() {
	topic := a.topic()
	value := strconv.Itoa(Pick(a.rnd, 0, 100, 4096))
	validate := a.w.cfg.Admin.On || a.rnd.Chance(0.3)
	req := kmsg.NewPtrAlterConfigsRequest()
	req.ValidateOnly = validate
	res := kmsg.NewAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	for _, t := range a.w.cfg.Topics {
		if t.Name != topic {
			continue
		}
		for _, k := range sortedKeys(t.Configs) {
			if k == "index.interval.bytes" {
				continue
			}
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = k, kmsg.StringPtr(t.Configs[k])
			res.Configs = append(res.Configs, c)
		}
	}
	c := kmsg.NewAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "index.interval.bytes", &value
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	dels := a.deletions(topic)
	a.expect[topic] = ""
	a.send(req, a.timeout(), func(r kmsg.Response, err error) {
		a.lost[topic] = a.lost[topic] || err != nil
		if err == nil {
			for _, rr := range r.(*kmsg.AlterConfigsResponse).Resources {
				a.code("alter-configs", rr.ErrorCode)
				if rr.ErrorCode == 0 && !validate && a.deletions(topic) == dels {
					a.expect[topic], a.expDels[topic] = value, dels
				}
			}
		}
		a.next(err)
	})
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// listByTime asks for the first offset at or after a past instant (or the record with
// the largest timestamp): an answer's timestamp is never before the one asked for.
func (a *auditor) listByTime() {
	tp := a.tp()
	dels := a.deletions(tp.Topic)
	ts := (epochNs + a.rnd.Between(0, max(a.w.now, 1))) / int64(ms)
	switch a.rnd.Intn(5) {
	case 0:
		ts = -3 // MAX_TIMESTAMP (v7)
	case 1:
		ts = -1 // latest: noted for DeleteRecords
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = tp.Topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = tp.Partition, ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	call := a.w.now
	a.sendAt(req, 7, func(r kmsg.Response, err error) {
		if err == nil {
			for _, t := range r.(*kmsg.ListOffsetsResponse).Topics {
				for _, p := range t.Partitions {
					a.code("list-offsets", p.ErrorCode)
					a.w.timeLookup(call, tp, ts, t.Topic, &p)
					if p.ErrorCode == 0 && ts == -1 && a.deletions(tp.Topic) == dels {
						a.hwm[tp], a.hwmDels[tp] = p.Offset, dels
					}
					if p.ErrorCode == 0 && p.Offset >= 0 && ts >= 0 && p.Timestamp < ts {
						a.failf("ListOffsets %s by time %d answered offset %d with "+
							"timestamp %d, before the one asked for", tp, ts, p.Offset,
							p.Timestamp)
					}
				}
			}
		}
		a.next(err)
	})
}

// staleFetch fetches with a leader epoch older or newer than the leader's, or in a
// fetch session the broker never created: no records may come back.
func (a *auditor) staleFetch() {
	tp := a.tp()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 1<<20
	req.SessionEpoch = -1
	epoch := Pick[int32](a.rnd, -2, 3)
	if a.rnd.Chance(0.3) {
		req.SessionID, req.SessionEpoch, epoch = 17, 5, -1
	}
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = tp.Topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = tp.Partition, epoch, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	a.sendAt(req, 12, func(r kmsg.Response, err error) {
		if err == nil {
			resp := r.(*kmsg.FetchResponse)
			a.code("fetch", resp.ErrorCode)
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					a.code("fetch", p.ErrorCode)
					if len(p.RecordBatches) > 0 || (p.ErrorCode == 0 && resp.ErrorCode == 0) {
						a.failf("Fetch %s with leader epoch %d, session epoch %d was "+
							"served (code %d, %d bytes)", tp, epoch, req.SessionEpoch,
							p.ErrorCode, len(p.RecordBatches))
					}
				}
			}
		}
		a.next(err)
	})
}

// staleListOffsets asks for the log start with a stale or future leader epoch.
func (a *auditor) staleListOffsets() {
	tp := a.tp()
	epoch := Pick[int32](a.rnd, -2, 3)
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = tp.Topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = tp.Partition, -2, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	a.sendAt(req, 7, func(r kmsg.Response, err error) {
		if err == nil {
			for _, t := range r.(*kmsg.ListOffsetsResponse).Topics {
				for _, p := range t.Partitions {
					a.code("list-offsets", p.ErrorCode)
					if p.ErrorCode == 0 {
						a.failf("ListOffsets %s with leader epoch %d was answered", tp, epoch)
					}
				}
			}
		}
		a.next(err)
	})
}

// epochEnd asks OffsetForLeaderEpoch for epoch 0 (the only one): its end offset is
// never below a high-water mark seen before (what it covers is durable), unless the
// topic was deleted since or the run lets acknowledged data be lost
// (log.flush.policy=never). With the current epoch stale or ahead, the request must be
// refused.
func (a *auditor) epochEnd() {
	tp := a.tp()
	seen, known := a.hwm[tp]
	known = known && a.hwmDels[tp] == a.deletions(tp.Topic) &&
		a.w.cfg.Broker["log.flush.policy"] != "never"
	current := Pick[int32](a.rnd, -1, -1, 0, -2, 2)
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = tp.Topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = tp.Partition, current, 0
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	a.sendAt(req, 4, func(r kmsg.Response, err error) {
		if err == nil {
			for _, t := range r.(*kmsg.OffsetForLeaderEpochResponse).Topics {
				for _, p := range t.Partitions {
					a.code("offset-for-leader-epoch", p.ErrorCode)
					if p.ErrorCode == 0 && current != -1 && current != 0 {
						a.failf("OffsetForLeaderEpoch %s with current epoch %d was answered",
							tp, current)
					}
					if p.ErrorCode == 0 && known && a.hwmDels[tp] == a.deletions(tp.Topic) &&
						p.EndOffset < seen {
						a.failf("OffsetForLeaderEpoch %s: end offset %d below the "+
							"high-water mark %d seen before", tp, p.EndOffset, seen)
					}
				}
			}
		}
		a.next(err)
	})
}

// deleteRecords moves a partition's log start: to a past high-water mark it saw, to
// the current one (-1), or beyond it (refused). An acknowledged deletion reports a low
// watermark at least the offset asked for.
func (a *auditor) deleteRecords() {
	tp := a.tp()
	offset := int64(-1)
	if h, ok := a.hwm[tp]; ok && a.rnd.Chance(0.6) {
		offset = a.rnd.Between(0, h)
	}
	beyond := a.rnd.Chance(0.2)
	if beyond {
		offset = 1 << 40
	}
	req := deleteRecordsRequest(tp.Topic, tp.Partition, offset, a.timeout())
	a.w.stats.Faults["delete-records"]++
	a.deletes = append(a.deletes, DeleteRecordsCall{TP: tp, Offset: offset, Sent: a.w.now})
	trim := -1
	if !beyond {
		// The log-start checker (linearizability/retention.go) is told when the call is
		// sent: from then on the start may move that far. A call beyond the high-water
		// mark must be refused, so it allows nothing.
		a.w.hist.Trims = append(a.w.hist.Trims, linearizability.Trim{Topic: tp.Topic,
			Partition: tp.Partition, At: a.w.now, Offset: offset})
		trim = len(a.w.hist.Trims) - 1
	}
	idx := len(a.deletes) - 1
	a.send(req, a.timeout(), func(r kmsg.Response, err error) {
		call := &a.deletes[idx]
		call.Return = a.w.now
		if err == nil {
			for _, t := range r.(*kmsg.DeleteRecordsResponse).Topics {
				for _, p := range t.Partitions {
					a.code("delete-records", p.ErrorCode)
					call.Done, call.Code, call.LowWatermark = true, p.ErrorCode, p.LowWatermark
					switch {
					case p.ErrorCode == 0 && beyond:
						a.failf("DeleteRecords %s before %d, beyond the high-water mark, "+
							"was accepted", tp, offset)
					case p.ErrorCode == 0 && p.LowWatermark < offset:
						a.failf("DeleteRecords %s before %d answered low watermark %d", tp,
							offset, p.LowWatermark)
					case p.ErrorCode == 0:
						a.w.ackTrim(trim, p.LowWatermark)
					}
				}
			}
		}
		a.next(err)
	})
}

// deletable reports a topic the deleter may delete and re-create: its partition count
// may then be lower for a while than any count seen before.
func (a *auditor) deletable(topic string) bool {
	if !a.w.cfg.Deletes.On {
		return false
	}
	for _, t := range a.w.cfg.deletableTopics() {
		if t == topic {
			return true
		}
	}
	return false
}

// shrinkPartitions asks for as many or fewer partitions than a topic has: refused.
func (a *auditor) shrinkPartitions() {
	topic := a.topic()
	count := int32(a.rnd.Between(0, int64(max(a.parts[topic], 1))))
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = int32(a.timeout())
	req.ValidateOnly = a.rnd.Chance(0.5)
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, count
	req.Topics = append(req.Topics, rt)
	a.send(req, a.timeout(), func(r kmsg.Response, err error) {
		if err == nil {
			for _, t := range r.(*kmsg.CreatePartitionsResponse).Topics {
				a.code("create-partitions", t.ErrorCode)
				if t.ErrorCode == 0 && !a.deletable(topic) {
					a.failf("CreatePartitions %s to %d (it had %d) was accepted", topic,
						count, a.parts[topic])
				}
			}
		}
		a.next(err)
	})
}

func (a *auditor) describeCluster() {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeClusterAuthorizedOperations = a.rnd.Chance(0.5)
	a.send(req, a.timeout(), func(r kmsg.Response, err error) {
		if err == nil {
			resp := r.(*kmsg.DescribeClusterResponse)
			a.code("describe-cluster", resp.ErrorCode)
			if resp.ErrorCode == 0 && len(resp.Brokers) != a.w.cfg.Nodes {
				a.failf("DescribeCluster lists %d brokers, the cluster has %d",
					len(resp.Brokers), a.w.cfg.Nodes)
			}
		}
		a.next(err)
	})
}

// badProduce sends produces the broker must refuse without writing: a batch over
// max.message.bytes, acks=2, or a version without v2 batches.
func (a *auditor) badProduce() {
	tp := a.tp()
	kind := a.rnd.Intn(3)
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, int32(a.timeout())
	value := []byte("audit")
	version := a.vers[int16(kmsg.Produce)]
	switch kind {
	case 0:
		value = make([]byte, 1100*1024) // over the default max.message.bytes (1 MiB)
	case 1:
		req.Acks = 2
	case 2:
		version = 2
	}
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = tp.Topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = tp.Partition
	rp.Records = batch.Build([]batch.KV{{Key: []byte("audit"), Value: value}},
		batch.NoProducer, (epochNs+a.w.now)/int64(ms))
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	send := func(done func(kmsg.Response, error)) { a.sendAt(req, version, done) }
	if version < 3 {
		// Below the client's floor: sent as is, as an old client would.
		send = func(done func(kmsg.Response, error)) {
			old := a.vers[int16(kmsg.Produce)]
			a.vers[int16(kmsg.Produce)] = 2
			a.send(req, a.timeout(), done)
			a.vers[int16(kmsg.Produce)] = old
		}
	}
	send(func(r kmsg.Response, err error) {
		if err == nil {
			for _, t := range r.(*kmsg.ProduceResponse).Topics {
				for _, p := range t.Partitions {
					a.code("produce", p.ErrorCode)
					if p.ErrorCode == 0 {
						a.failf("a malformed produce to %s (kind %d) was accepted at "+
							"offset %d", tp, kind, p.BaseOffset)
					}
				}
			}
		}
		a.next(err)
	})
}

// versionRange is the range a client may speak for key: what the broker serves and
// kmsg can encode.
func versionRange(key int16) ([2]int16, bool) {
	v, ok := broker.VersionFor(key)
	req := kmsg.RequestForKey(key)
	if !ok || req == nil {
		return [2]int16{}, false
	}
	return [2]int16{v.Min, min(v.Max, req.MaxVersion())}, true
}
