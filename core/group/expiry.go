package group

// Expiry of committed offsets (offsets.retention.minutes, KIP-211, Kafka ≥ 2.1).
//
// Which offsets of a group may expire, and counting from when:
//
//   - Empty group (no members): every offset, retention counted from the time the group
//     became Empty; for a group that never had members here (a simple consumer or admin
//     tool committing with generation -1) from each offset's commit time. Unlike Kafka,
//     an offset committed after the group became Empty (e.g. an offset reset by an
//     admin tool) counts from its commit, never from before it: a fresh commit is never
//     expired at the next check.
//   - Stable "consumer" group whose members' subscriptions are all readable: offsets of
//     topics no member subscribes to, counted from their commit time.
//   - Any other group (members, rebalancing): none.
//
// An offset committed with an explicit retention time (OffsetCommit v2–v4) expires at
// its ExpireMs instead, under the same conditions. Partitions with an offset write in
// flight are skipped (Kafka's pendingOffsetCommits): a tombstone appended after a commit
// still waiting to become durable would delete that acknowledged commit.
//
// After a restart a group comes back from its metadata record (metadata.go) with the
// time it became Empty (the record's current state timestamp). A group without a
// record (only offsets: simple consumers, or data written before records existed)
// has no empty time; such a recovered group counts from its latest commit (of any
// partition), which is never later than the time it became Empty: its offsets may go
// up to that gap earlier than Kafka would drop them, never later than a week after the
// last commit. A later join and departure gives it a real empty time again.

import (
	"math"
	"sort"

	"github.com/sluicemq/sluice/core"
)

// Expired is the offsets of one group due for expiry.
type Expired struct {
	Group string
	TPs   []core.TopicPartition // sorted
}

// ExpiredOffsets returns, by group id, every committed offset due for expiry at now.
// It changes nothing: the caller writes tombstones and applies them once durable.
func (c *Coordinator) ExpiredOffsets(now core.Time) []Expired {
	var out []Expired
	for _, id := range c.GroupIDs() {
		if tps := c.expiredIn(c.groups[id], now.Millis()); len(tps) > 0 {
			out = append(out, Expired{Group: id, TPs: tps})
		}
	}
	return out
}

func (c *Coordinator) expiredIn(g *Group, nowMs int64) []core.TopicPartition {
	offs := c.offsets[g.id]
	if len(offs) == 0 {
		return nil
	}
	groupBase := int64(math.MinInt64) // from each offset's own commit time
	keep := func(string) bool { return false }
	hit := pOffsetsExpireEmpty
	switch {
	case g.state == Empty && len(g.members) == 0:
		if g.emptyKnown {
			groupBase = g.emptySince.Millis()
		} else if g.recovered {
			for _, o := range offs {
				groupBase = max(groupBase, o.CommitMs)
			}
		}
	case g.state == Stable && g.protocolType == "consumer":
		topics, known := g.SubscribedTopics()
		if !known {
			return nil
		}
		subscribed := map[string]bool{}
		for _, t := range topics {
			subscribed[t] = true
		}
		keep = func(t string) bool { return subscribed[t] }
		hit = pOffsetsExpireUnsubbed
	default:
		return nil
	}
	var tps []core.TopicPartition
	for tp, o := range offs {
		if c.writing[g.id][tp] > 0 || keep(tp.Topic) {
			continue
		}
		due := o.ExpireMs
		if due == 0 {
			due = satAdd(max(groupBase, o.CommitMs), c.cfg.OffsetsRetentionMs)
		}
		if nowMs >= due {
			tps = append(tps, tp)
		}
	}
	if len(tps) > 0 {
		c.cfg.Probes.Hit(hit)
	}
	sort.Slice(tps, func(i, j int) bool { return tps[i].Less(tps[j]) })
	return tps
}

// satAdd adds without wrapping around (a huge retention means never).
func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// WriteStarted counts an offset write (commit or tombstone) of a group's partitions
// that is not durable yet; WriteEnded must follow exactly once, whatever the outcome.
func (c *Coordinator) WriteStarted(groupID string, tps []core.TopicPartition) {
	m := c.writing[groupID]
	if m == nil {
		m = map[core.TopicPartition]int{}
		c.writing[groupID] = m
	}
	for _, tp := range tps {
		m[tp]++
	}
}

// WriteEnded ends what WriteStarted began.
func (c *Coordinator) WriteEnded(groupID string, tps []core.TopicPartition) {
	m := c.writing[groupID]
	for _, tp := range tps {
		core.Invariant(m[tp] > 0, "G4", "group %s: offset write of %v ended twice",
			groupID, tp)
		if m[tp]--; m[tp] <= 0 {
			delete(m, tp)
		}
	}
	if len(m) == 0 {
		delete(c.writing, groupID)
	}
}

// MarkRecovered marks every group whose empty time is unknown as rebuilt from the
// offsets topic. The broker calls it once the topic is replayed.
func (c *Coordinator) MarkRecovered() {
	for _, g := range c.groups {
		if !g.emptyKnown {
			g.recovered = true
		}
	}
}
