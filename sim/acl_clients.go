package sim

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
)

// aclClient is a client with a principal of its own (the driver hands it to the
// broker as the net layer does after SASL or TLS: broker.Request.Principal). It
// produces one-record batches of unique values to partition 0 of aclTopic with
// acks=all, one request at a time, and reads the partition from its start; each
// answer goes to the ACL checker (acl_check.go). At the heal it stops producing
// (the quota client only once it has an acknowledgement since its quota was set) and
// reads to the end.
type aclClient struct {
	clientBase
	quota    bool // its client id has the produce quota
	tm       topicMeta
	busyReq  bool
	draining bool
	caughtUp bool
	seq      int
	pos      int64
	// acksAfterQuota, bytesAfterQuota: produces acknowledged after the quota was set,
	// and their batch bytes; throttled: answers carrying ThrottleMillis > 0.
	acksAfterQuota  int
	bytesAfterQuota map[[2]uint64]int64 // by (node, incarnation)
	throttled       int
}

const aclClientTimeoutMs = 2000

func newACLClient(w *World, actor int32, principal string) *aclClient {
	c := &aclClient{bytesAfterQuota: map[[2]uint64]int64{}}
	c.clientBase = newClientBase(w, actor, aclClientName(principal), c.pump)
	c.principal = principal
	c.quota = w.aclQuotaClient(c.name)
	if c.rt != nil {
		c.rt.stale = &c.tm
	}
	return c
}

func (c *aclClient) start() { c.wakeIn(c.rnd.Between(0, 50) * ms) }
func (c *aclClient) heal() {
	c.draining = true
	c.wakeIn(0)
}

// busy holds the final read back while the quota client has had no acknowledgement
// since its quota was set (its liveness condition; the heal budget bounds the wait).
func (c *aclClient) busy() string {
	if c.quota && c.w.acls.quotaSetAt > 0 && c.acksAfterQuota == 0 {
		return c.name + " (throttled by its quota) has had no produce acknowledged yet"
	}
	return ""
}

func (c *aclClient) pump() {
	needAck := c.busy() != ""
	if c.busyReq || c.tm.busy || c.backingOff() || c.draining && c.caughtUp && !needAck {
		return
	}
	if c.rt != nil {
		if _, ok := c.rt.leader(aclTopic, 0); !ok || c.w.now >= c.tm.next {
			c.refreshPartitions(&c.tm, aclTopic, aclClientTimeoutMs, 100, func(int32) {})
			return
		}
	}
	produce := !c.draining || needAck
	if produce && c.rnd.Chance(0.6) {
		c.produce()
		return
	}
	c.fetch()
}

// next schedules the next request.
func (c *aclClient) next() {
	c.busyReq = false
	c.wakeIn(c.rnd.Exp(ms, 10*ms))
}

func (c *aclClient) produce() {
	c.seq++
	val := fmt.Sprintf("%s-%d", c.name, c.seq)
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 1000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = aclTopic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = assembleBatch(encodeRecord(0, "k", val), 1, 0, (epochNs+c.w.now)/ms)
	size := int64(len(rp.Records))
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	c.busyReq = true
	var key [2]uint64
	c.send(req, aclClientTimeoutMs, func(r kmsg.Response, err error) {
		q := c.w.acls.take(key)
		defer c.next()
		if err != nil {
			return
		}
		pr := r.(*kmsg.ProduceResponse)
		c.noteThrottle("produce", pr.ThrottleMillis)
		for _, t := range pr.Topics {
			for _, p := range t.Partitions {
				c.code("acl-produce", p.ErrorCode)
				switch p.ErrorCode {
				case 0:
					c.w.acls.verdict(c, "produce", q, false)
					if c.w.acls.quotaSetAt > 0 {
						c.acksAfterQuota++
						if q != nil {
							c.bytesAfterQuota[[2]uint64{uint64(q.node), q.gen}] += size
						}
					}
				case kerr.TopicAuthorizationFailed.Code:
					c.w.acls.verdict(c, "produce", q, true)
					c.w.acls.refused[val] = true
				}
			}
		}
	})
	key = [2]uint64{c.c.id, c.nextCorr}
}

// noteThrottle counts a throttled answer; a client without a quota must not get one
// (unless the run sets quotas for every client id: AdminSpec.QuotaBytes, QuotaPercent).
func (c *aclClient) noteThrottle(api string, t int32) {
	if t <= 0 {
		return
	}
	c.throttled++
	c.w.stats.ACLs["throttled-"+c.name]++
	if !c.quota && c.w.cfg.Admin.QuotaBytes == 0 && c.w.cfg.Admin.QuotaPercent == 0 {
		c.w.fail("quota", "%s: a %s answer carried ThrottleMillis %d though no quota "+
			"applies to it", c.name, api, t)
	}
}

func (c *aclClient) fetch() {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 1<<16
	req.SessionID, req.SessionEpoch = 0, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = aclTopic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes = c.pos, 1<<16
	rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	c.busyReq = true
	var key [2]uint64
	c.send(req, aclClientTimeoutMs, func(r kmsg.Response, err error) {
		q := c.w.acls.take(key)
		defer c.next()
		if err != nil {
			return
		}
		fr := r.(*kmsg.FetchResponse)
		c.noteThrottle("fetch", fr.ThrottleMillis)
		for _, t := range fr.Topics {
			for i := range t.Partitions {
				c.fetched(q, &t.Partitions[i])
			}
		}
	})
	key = [2]uint64{c.c.id, c.nextCorr}
}

func (c *aclClient) fetched(q *aclReq, rp *kmsg.FetchResponseTopicPartition) {
	c.code("acl-fetch", rp.ErrorCode)
	switch rp.ErrorCode {
	case 0:
		c.w.acls.verdict(c, "fetch", q, false)
		recs, err := c.w.decodeBatches(core.TopicPartition{Topic: aclTopic}, rp.RecordBatches)
		if err != nil {
			c.w.fail("anomaly", "%s: fetch of %s-0 at %d: %v", c.name, aclTopic, c.pos, err)
			return
		}
		for _, r := range recs {
			if r.Offset >= c.pos {
				c.w.acls.read[r.Value] = true
				c.pos = r.Offset + 1
			}
		}
		if len(recs) == 0 && c.draining {
			c.caughtUp = true
		}
	case kerr.TopicAuthorizationFailed.Code:
		c.w.acls.verdict(c, "fetch", q, true)
	case kerr.OffsetOutOfRange.Code:
		c.pos = max(rp.LogStartOffset, 0)
	}
}

// maxIncarnationBytes is the most batch bytes one broker incarnation acknowledged to
// the client after its quota was set.
func (c *aclClient) maxIncarnationBytes() int64 {
	var m int64
	for _, b := range c.bytesAfterQuota {
		m = max(m, b)
	}
	return m
}
