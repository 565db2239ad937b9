package sim

import (
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/linearizability"
)

// admin creates the run's topics at the start, then (when enabled) now and then adds
// partitions or changes retention and segment settings, as an operator would.
type admin struct {
	clientBase
	spec     AdminSpec
	topics   []TopicSpec
	created  bool
	quotaSet bool // AdminSpec.QuotaBytes and QuotaPercent are in force
	busyReq  bool
	draining bool
	parts    map[string]int32
	low      map[core.TopicPartition]int64 // low watermarks DeleteRecords returned
}

func newAdmin(w *World, actor int32) *admin {
	a := &admin{spec: w.cfg.Admin, topics: w.cfg.Topics, parts: map[string]int32{},
		low: map[core.TopicPartition]int64{}}
	a.clientBase = newClientBase(w, actor, "admin", a.pump)
	for _, t := range a.topics {
		a.parts[t.Name] = t.Partitions
	}
	return a
}

func (a *admin) start()         { a.wakeIn(0) }
func (a *admin) heal()          { a.draining = true }
func (a *admin) busy() string   { return "" }
func (a *admin) timeout() int64 { return 3000 }

func (a *admin) pump() {
	if a.backingOff() || a.busyReq {
		return
	}
	if !a.created {
		a.createTopics()
		return
	}
	if (a.spec.QuotaBytes > 0 || a.spec.QuotaPercent > 0) && !a.quotaSet {
		a.setQuota()
		return
	}
	if a.draining || !a.spec.On || len(a.topics) == 0 {
		return
	}
	t := a.topics[a.rnd.Intn(len(a.topics))]
	if a.spec.TrimChance > 0 && a.rnd.Chance(a.spec.TrimChance) {
		a.deleteRecords(t.Name)
		return
	}
	if a.spec.ReassignChance > 0 && a.w.cfg.Nodes > 1 && a.rnd.Chance(a.spec.ReassignChance) {
		a.reassign(t.Name)
		return
	}
	switch a.rnd.Intn(3) {
	case 0:
		if a.parts[t.Name] < a.spec.MaxPartitions {
			a.createPartitions(t.Name, a.parts[t.Name]+1)
			return
		}
		a.alterConfig(t.Name)
	default:
		a.alterConfig(t.Name)
	}
}

// next schedules the next change. Until the run's topics exist the admin asks again
// after 100 ms, as a deployment script would: drawn from the workload's pace (mean
// EveryMs, a long tail), a refused CreateTopics was retried only after 15 s on seed
// 3512 of the default world, and the groups never settled.
func (a *admin) next(err error) {
	a.busyReq = false
	if err != nil {
		a.wakeIn(200 * ms)
		return
	}
	if !a.created {
		a.wakeIn(100 * ms)
		return
	}
	a.wakeIn(a.rnd.Exp(10*ms, a.spec.EveryMs*ms))
}

// findController asks for metadata when a clustered world's admin does not know the
// controller, as a Kafka admin client does before a controller request (CreateTopics,
// CreatePartitions, AlterPartitionReassignments); it reports whether it asked. Without
// it the admin sent them to its bootstrap node, which answers NOT_CONTROLLER unless it
// leads the quorum: the run's topics were never created once the quorum left that node
// (seeds 105 and 216 with three nodes: no topic, groups never settle).
func (a *admin) findController() bool {
	if a.rt == nil || a.rt.ctl >= 0 {
		return false
	}
	a.busyReq = true
	a.requestController(a.timeout(), func(err error) {
		a.busyReq = false
		if err != nil {
			a.wakeIn(200 * ms)
			return
		}
		a.wakeIn(0)
	})
	return true
}

func (a *admin) createTopics() {
	if a.findController() {
		return
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(a.timeout())
	for _, t := range a.topics {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions = t.Name, t.Partitions
		rt.ReplicationFactor = a.w.cfg.replicationFactor()
		names := make([]string, 0, len(t.Configs))
		for k := range t.Configs {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, kmsg.StringPtr(t.Configs[k])
			rt.Configs = append(rt.Configs, c)
		}
		req.Topics = append(req.Topics, rt)
	}
	a.busyReq = true
	a.send(req, a.timeout(), func(r kmsg.Response, err error) {
		if err == nil {
			ok := true
			for _, t := range r.(*kmsg.CreateTopicsResponse).Topics {
				a.code("create-topics", t.ErrorCode)
				if t.ErrorCode == 0 { // answered after the commit: the log has it
					a.w.meta.checkReported(a.name, t.Topic, t.TopicID, max(t.NumPartitions, 0))
				}
				if t.ErrorCode != 0 && t.ErrorCode != kerr.TopicAlreadyExists.Code {
					ok = false
				}
			}
			a.created = ok
		}
		a.next(err)
	})
}

// setQuota sets the client-id=<default> quotas: byte rates (AdminSpec.QuotaBytes)
// and request_percentage (AdminSpec.QuotaPercent), those that are on.
func (a *admin) setQuota() {
	req := kmsg.NewPtrAlterClientQuotasRequest()
	e := kmsg.NewAlterClientQuotasRequestEntry()
	ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
	ent.Type = "client-id" // Name nil: the <default> client id
	e.Entity = append(e.Entity, ent)
	add := func(k string, v float64) {
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Value = k, v
		e.Ops = append(e.Ops, op)
	}
	if a.spec.QuotaBytes > 0 {
		add("producer_byte_rate", float64(a.spec.QuotaBytes))
		add("consumer_byte_rate", float64(a.spec.QuotaBytes))
	}
	if a.spec.QuotaPercent > 0 {
		add("request_percentage", a.spec.QuotaPercent)
	}
	req.Entries = append(req.Entries, e)
	a.busyReq = true
	a.send(req, a.timeout(), func(r kmsg.Response, err error) {
		if err == nil {
			for _, e := range r.(*kmsg.AlterClientQuotasResponse).Entries {
				a.code("alter-client-quotas", e.ErrorCode)
				a.quotaSet = e.ErrorCode == 0
			}
		}
		a.next(err)
	})
}

func (a *admin) createPartitions(topic string, count int32) {
	if a.findController() {
		return
	}
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = int32(a.timeout())
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, count
	req.Topics = append(req.Topics, rt)
	a.busyReq = true
	a.send(req, a.timeout(), func(r kmsg.Response, err error) {
		if err == nil {
			for _, t := range r.(*kmsg.CreatePartitionsResponse).Topics {
				a.code("create-partitions", t.ErrorCode)
				if t.ErrorCode == 0 || t.ErrorCode == kerr.InvalidPartitions.Code {
					a.parts[topic] = max(a.parts[topic], count)
				}
			}
		}
		a.next(err)
	})
}

// alterConfig sets or removes one retention or segment setting.
func (a *admin) alterConfig(topic string) {
	type change struct {
		name   string
		values []int
	}
	changes := []change{
		{"retention.ms", []int{1000, 5000, 30000, 604800000}},
		{"retention.bytes", []int{4096, 65536, -1}},
		{"segment.bytes", []int{1024, 16384, 1 << 20}},
	}
	ch := changes[a.rnd.Intn(len(changes))]
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name = ch.name
	if a.rnd.Chance(0.2) {
		c.Op = kmsg.IncrementalAlterConfigOpDelete
	} else {
		c.Op = kmsg.IncrementalAlterConfigOpSet
		c.Value = kmsg.StringPtr(strconv.Itoa(ch.values[a.rnd.Intn(len(ch.values))]))
		a.w.retentionSent(topic, c.Name, *c.Value)
	}
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	a.busyReq = true
	a.send(req, a.timeout(), func(r kmsg.Response, err error) {
		if err == nil {
			for _, rr := range r.(*kmsg.IncrementalAlterConfigsResponse).Resources {
				a.code("alter-configs", rr.ErrorCode)
			}
		}
		a.next(err)
	})
}

// deleteRecords asks one partition to start at a drawn offset a little past the last
// low watermark seen, or at the high-water mark (-1). The checker is told the request
// when it is sent (linearizability.Trim): the log start may move that far, no further.
func (a *admin) deleteRecords(topic string) {
	tp := core.TopicPartition{Topic: topic, Partition: int32(a.rnd.Intn(int(a.parts[topic])))}
	offset := int64(-1)
	if !a.rnd.Chance(0.15) {
		offset = a.low[tp] + a.rnd.Between(0, 300)
	}
	req := deleteRecordsRequest(topic, tp.Partition, offset, a.timeout())
	a.w.hist.Trims = append(a.w.hist.Trims, linearizability.Trim{Topic: topic,
		Partition: tp.Partition, At: a.w.now, Offset: offset})
	trim := len(a.w.hist.Trims) - 1
	a.busyReq = true
	a.send(req, a.timeout(), func(r kmsg.Response, err error) {
		if err == nil {
			for _, t := range r.(*kmsg.DeleteRecordsResponse).Topics {
				for _, p := range t.Partitions {
					a.code("delete-records", p.ErrorCode)
					if p.ErrorCode == 0 {
						a.low[tp] = max(a.low[tp], p.LowWatermark)
						a.w.ackTrim(trim, p.LowWatermark)
					}
				}
			}
		}
		a.next(err)
	})
}
