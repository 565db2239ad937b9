package sim

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/linearizability"
)

// committer commits offsets for a few groups on one topic's partitions, as a simple
// consumer or admin tool does (generation -1, no membership), and fetches them back.
// Each (group, partition)'s committed offset is checked as a register. After the heal
// it reads every register it wrote once more, so a commit lost in a crash is seen.
type committer struct {
	clientBase
	spec     CommitterSpec
	num      int
	parts    int32
	metaBusy bool
	busyReq  bool
	count    int64
	draining bool
	touched  []regKey // registers written, in first-write order
	seen     map[regKey]bool
	finalAt  int // next register to read back after the heal
}

type regKey struct {
	group string
	tp    core.TopicPartition
}

func newCommitter(w *World, actor int32, num int, spec CommitterSpec) *committer {
	c := &committer{spec: spec, num: num, seen: map[regKey]bool{}}
	c.clientBase = newClientBase(w, actor, fmt.Sprintf("committer%d", num), c.pump)
	return c
}

func (c *committer) start() { c.wakeIn(c.rnd.Between(0, 200) * ms) }

func (c *committer) heal() { c.draining = true; c.wakeIn(0) }

func (c *committer) busy() string {
	if c.draining && c.finalAt < len(c.touched) {
		return fmt.Sprintf("%s has read back %d of %d committed offsets", c.name, c.finalAt,
			len(c.touched))
	}
	return ""
}

func (c *committer) pump() {
	if c.backingOff() || c.busyReq {
		return
	}
	if c.parts == 0 {
		if !c.metaBusy {
			c.metaBusy = true
			c.requestMetadata([]string{c.spec.Topic}, c.spec.TimeoutMs,
				func(counts map[string]int32, err error) {
					c.metaBusy = false
					c.parts = counts[c.spec.Topic]
					c.wakeIn(c.spec.EveryMs * ms)
				})
		}
		return
	}
	if c.draining {
		if c.finalAt < len(c.touched) && !c.findCoordinator(c.touched[c.finalAt].group) {
			c.fetch(c.touched[c.finalAt], true)
		}
		return
	}
	k := regKey{fmt.Sprintf("g%d", c.rnd.Intn(c.spec.Groups)),
		core.TopicPartition{Topic: c.spec.Topic, Partition: int32(c.rnd.Intn(int(c.parts)))}}
	if c.findCoordinator(k.group) {
		return
	}
	if c.rnd.Chance(c.spec.ReadChance) {
		c.fetch(k, false)
	} else {
		c.commit(k)
	}
}

// next schedules the next step.
func (c *committer) next() {
	c.busyReq = false
	if c.draining {
		c.wakeIn(0)
		return
	}
	c.wakeIn(c.rnd.Exp(ms, c.spec.EveryMs*ms))
}

func (c *committer) commit(k regKey) {
	c.count++
	value := int64(c.num)*1_000_000_000 + c.count
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = k.group, -1, ""
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = k.tp.Topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = k.tp.Partition, value, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if !c.seen[k] {
		c.seen[k] = true
		c.touched = append(c.touched, k)
	}
	id := c.w.record(linearizability.Op{Kind: linearizability.OpCommit, Client: int(c.actor),
		TP: k.tp, Group: k.group, Call: c.w.now, Outcome: linearizability.Unknown,
		Offset: value})
	c.busyReq = true
	c.send(req, c.spec.TimeoutMs, func(r kmsg.Response, err error) {
		if err == nil {
			c.w.hist.Op(id).Coord = c.lastTerm // 0 in a one-node world
			c.committed(id, r.(*kmsg.OffsetCommitResponse))
		}
		c.next()
	})
}

func (c *committer) committed(id int, resp *kmsg.OffsetCommitResponse) {
	code := int16(-1)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			code = p.ErrorCode
		}
	}
	c.code("offset-commit", code)
	switch code {
	case 0:
		c.w.resolve(id, linearizability.OK, c.w.hist.Op(id).Offset, 0)
	case kerr.UnknownTopicOrPartition.Code, kerr.IllegalGeneration.Code,
		kerr.InvalidGroupID.Code:
		c.w.resolve(id, linearizability.Failed, c.w.hist.Op(id).Offset, code)
	default:
		c.w.hist.Op(id).ErrCode = code // may or may not have been stored
	}
}

// fetch reads one register; final reads advance the read-back after the heal.
func (c *committer) fetch(k regKey, final bool) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(c.vers[req.Key()])
	if req.Version >= 8 {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = k.group
		t := kmsg.NewOffsetFetchRequestGroupTopic()
		t.Topic, t.Partitions = k.tp.Topic, []int32{k.tp.Partition}
		g.Topics = append(g.Topics, t)
		req.Groups = append(req.Groups, g)
	} else {
		req.Group = k.group
		t := kmsg.NewOffsetFetchRequestTopic()
		t.Topic, t.Partitions = k.tp.Topic, []int32{k.tp.Partition}
		req.Topics = append(req.Topics, t)
	}
	call := c.w.now
	c.busyReq = true
	c.send(req, c.spec.TimeoutMs, func(r kmsg.Response, err error) {
		if err == nil {
			if off, ok := c.fetched(k, r.(*kmsg.OffsetFetchResponse)); ok {
				c.w.record(linearizability.Op{Kind: linearizability.OpFetchCommitted,
					Client: int(c.actor), TP: k.tp, Group: k.group, Call: call,
					Return: c.w.now, Outcome: linearizability.OK, Offset: off, Final: final,
					Coord: c.lastTerm})
				c.w.tr.note("committed", off)
				if final {
					c.finalAt++
				}
			} else if c.rt != nil && final {
				c.busyReq = false // a cluster's coordinator moving or loading: wait
				c.wakeIn(c.rnd.Between(20, 100) * ms)
				return
			}
		} else if c.rt != nil && final {
			c.busyReq = false
			c.wakeIn(c.rnd.Between(20, 100) * ms)
			return
		}
		c.next()
	})
}

// fetched extracts the register's value from either response layout.
func (c *committer) fetched(k regKey, resp *kmsg.OffsetFetchResponse) (int64, bool) {
	if resp.Version >= 8 {
		for _, g := range resp.Groups {
			c.code("offset-fetch", g.ErrorCode)
			for _, t := range g.Topics {
				for _, p := range t.Partitions {
					c.code("offset-fetch", p.ErrorCode)
					if g.ErrorCode == 0 && p.ErrorCode == 0 && p.Partition == k.tp.Partition {
						return p.Offset, true
					}
				}
			}
		}
		return 0, false
	}
	c.code("offset-fetch", resp.ErrorCode)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			c.code("offset-fetch", p.ErrorCode)
			if resp.ErrorCode == 0 && p.ErrorCode == 0 && p.Partition == k.tp.Partition {
				return p.Offset, true
			}
		}
	}
	return 0, false
}

// findCoordinator: in a clustered world a group's requests go to its coordinator, the
// leader of its __consumer_offsets partition, as a Kafka client sends them. While the
// committer knows none for group (at first, and after an answer saying it moved or is
// unavailable: route.go groupCode), it asks any node with FindCoordinator instead and
// reports true; a lookup that fails backs off before the next. A single-node world
// sends everything to its node and never asks.
func (c *committer) findCoordinator(group string) bool {
	if c.rt == nil {
		return false
	}
	if _, ok := c.rt.coords[group]; ok {
		return false
	}
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.SetVersion(c.vers[req.Key()])
	if req.Version >= 4 {
		req.CoordinatorKeys = []string{group}
	} else {
		req.CoordinatorKey = group
	}
	c.busyReq = true
	c.send(req, c.spec.TimeoutMs, func(r kmsg.Response, err error) {
		c.busyReq = false
		if err == nil {
			resp := r.(*kmsg.FindCoordinatorResponse)
			code := resp.ErrorCode
			if resp.Version >= 4 && len(resp.Coordinators) == 1 {
				code = resp.Coordinators[0].ErrorCode
			}
			c.code("find-coordinator", code)
		}
		if _, ok := c.rt.coords[group]; ok {
			c.wakeIn(0)
			return
		}
		c.wakeIn(c.rnd.Between(20, 100) * ms) // COORDINATOR_NOT_AVAILABLE or lost: retry
	})
	return true
}
