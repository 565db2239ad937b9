package metatest

import (
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
)

// Adapter is one metadata log adapter seen from one node, driven by the suite from one
// goroutine. Its inputs may be delivered from any goroutine, one at a time.
type Adapter interface {
	// Boot starts a new incarnation over the log's durable state: it returns the Start
	// the node is stepped with, and delivers every later input of the incarnation
	// through deliver, in order (MetaLeaderChanged first, M7).
	Boot(deliver func(broker.Input)) broker.Start
	// Propose is Env.ProposeMeta.
	Propose(rec meta.Record, token uint64)
	// Settle returns once done() holds, or once the adapter can make no more progress
	// (the simulator's queue ran dry, the production adapter's bound passed).
	Settle(done func() bool)
	// Crash ends the incarnation at once (a power loss): nothing more is delivered to
	// it; proposals not answered yet may commit or not (M6).
	Crash()
	// Snapshot replaces the durable records up to index by image, which rebuilds the
	// metadata image there. An adapter without snapshots returns false.
	Snapshot(index uint64, image []meta.Record) (bool, error)
	// Close releases the adapter.
	Close()
}

// Factory builds a fresh adapter over an empty log for one rapid case; it may draw its
// own fault choices from t.
type Factory func(t *rapid.T) Adapter

// Run checks the adapters f builds against the metadata port contract.
func Run(t *testing.T, f Factory) {
	t.Helper()
	rapid.Check(t, func(rt *rapid.T) {
		a := f(rt)
		defer a.Close()
		c := &checker{t: rt, a: a, props: map[uint64]*prop{}}
		c.boot()
		for i, n := 0, rapid.IntRange(1, 40).Draw(rt, "actions"); i < n; i++ {
			c.act()
		}
		c.settle()
		c.restart(false)
		c.settle()
	})
}

// prop is what the suite knows of one proposal.
type prop struct {
	rec      meta.Record
	inc      int // incarnation that proposed it
	outcome  broker.MetaOutcome
	answered bool
	index    uint64 // where the log holds it (0: nowhere seen yet)
}

// checker holds the log as observed (hist) and the proposals, and checks each input.
type checker struct {
	t     *rapid.T
	a     Adapter
	props map[uint64]*prop
	next  uint64        // last token used
	hist  []meta.Record // the committed log as observed: index i+1 at hist[i]
	maxOK uint64        // highest token whose record is in the log (M5)

	inc      int
	mu       sync.Mutex
	inbox    []broker.Input // delivered and not checked yet
	applied  uint64         // last index applied in this incarnation
	epoch    uint64
	leader   bool // a MetaLeaderChanged was seen this incarnation
	appliedH map[uint64]bool
}

func (c *checker) deliver(in broker.Input) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inbox = append(c.inbox, in)
}

func (c *checker) act() {
	switch rapid.IntRange(0, 9).Draw(c.t, "action") {
	case 0, 1, 2, 3:
		for i, n := 0, rapid.IntRange(1, 3).Draw(c.t, "proposals"); i < n; i++ {
			c.propose()
		}
	case 4, 5:
		c.settle()
	case 6:
		c.restart(true) // a crash with proposals in flight
	case 7:
		c.settle()
		c.restart(false) // a clean restart: everything answered first
	case 8:
		c.snapshot()
	default:
		c.check()
	}
}

func (c *checker) propose() {
	c.next++
	rec := c.drawRecord(c.next)
	c.props[c.next] = &prop{rec: rec, inc: c.inc}
	c.a.Propose(rec, c.next)
}

// settle waits for every proposal of the incarnation to be answered (M3).
func (c *checker) settle() {
	c.a.Settle(func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		want := 0
		for _, p := range c.props {
			if p.inc == c.inc && !p.answered {
				want++
			}
		}
		return c.answersIn() >= want
	})
	c.check()
	for tok, p := range c.props {
		if p.inc == c.inc && !p.answered {
			c.t.Fatalf("M3: proposal %d not answered after settling", tok)
		}
	}
}

// answersIn counts the answers waiting in the inbox (c.mu held).
func (c *checker) answersIn() int {
	n := 0
	for _, in := range c.inbox {
		if _, ok := in.(broker.MetaAnswer); ok {
			n++
		}
	}
	return n
}

func (c *checker) snapshot() {
	c.check()
	idx := c.applied
	ok, err := c.a.Snapshot(idx, imageOf(c.hist[:idx]).Snapshot())
	if ok && err != nil {
		c.t.Logf("snapshot at %d failed (allowed: the store may be failed): %v", idx, err)
	}
}

// restart ends the incarnation (crash: with proposals possibly in flight) and boots
// the next one, checking its Start against the log observed so far.
func (c *checker) restart(crash bool) {
	c.a.Crash()
	c.check() // what was delivered before the end
	if !crash {
		for tok, p := range c.props {
			if p.inc == c.inc && !p.answered {
				c.t.Fatalf("M3: proposal %d unanswered at a clean restart", tok)
			}
		}
	}
	c.boot()
}

func (c *checker) boot() {
	c.inc++
	c.applied, c.epoch, c.leader, c.appliedH = 0, 0, false, map[uint64]bool{}
	st := c.a.Boot(c.deliver)
	c.checkStart(st)
}

// checkStart checks M1, M2's "a committed record never changes" and M6.
func (c *checker) checkStart(st broker.Start) {
	if st.SnapshotIndex > uint64(len(c.hist)) {
		c.t.Fatalf("M1: snapshot at %d beyond the %d records ever committed",
			st.SnapshotIndex, len(c.hist))
	}
	if st.SnapshotIndex == 0 && len(st.Snapshot) > 0 {
		c.t.Fatalf("M1: a snapshot at index 0")
	}
	if !imageOf(st.Snapshot).Equal(imageOf(c.hist[:st.SnapshotIndex])) {
		c.t.Fatalf("M1: the snapshot at %d differs from the image of the records it covers",
			st.SnapshotIndex)
	}
	for i, rec := range st.Records {
		idx := st.SnapshotIndex + uint64(i) + 1
		if idx <= uint64(len(c.hist)) {
			if !sameRecord(c.hist[idx-1], rec) {
				c.t.Fatalf("M2: index %d holds %+v at restart, %+v before", idx, rec, c.hist[idx-1])
			}
			continue
		}
		c.committed(idx, rec) // committed while nobody was looking (M6)
	}
	if last := st.LastIndex(); last < uint64(len(c.hist)) {
		c.t.Fatalf("M2: restart replays up to %d, but %d records committed", last, len(c.hist))
	}
	full := imageOf(c.hist)
	if !imageOf(append(append([]meta.Record(nil), st.Snapshot...), st.Records...)).Equal(full) {
		c.t.Fatalf("M1: snapshot+replay differs from a full replay")
	}
	c.applied = st.LastIndex()
}

// committed adds the record found at idx to the observed log, checking that it was
// proposed, once, may commit, and follows its proposer's order.
func (c *checker) committed(idx uint64, rec meta.Record) {
	if idx != uint64(len(c.hist))+1 {
		c.t.Fatalf("M2: index %d after %d", idx, len(c.hist))
	}
	tok := marker(rec)
	p := c.props[tok]
	switch {
	case p == nil:
		c.t.Fatalf("index %d holds a record nobody proposed: %+v", idx, rec)
	case p.index != 0:
		c.t.Fatalf("proposal %d committed twice: at %d and %d", tok, p.index, idx)
	case p.answered && (p.outcome == broker.MetaNotLeader || p.outcome == broker.MetaRejected):
		c.t.Fatalf("M3: proposal %d answered %v committed at %d", tok, p.outcome, idx)
	case tok < c.maxOK:
		c.t.Fatalf("M5: proposal %d committed at %d after proposal %d", tok, idx, c.maxOK)
	}
	p.index = idx
	c.maxOK = tok
	c.hist = append(c.hist, rec)
}

// check takes the inputs delivered so far and checks each in order.
func (c *checker) check() {
	c.mu.Lock()
	ins := c.inbox
	c.inbox = nil
	c.mu.Unlock()
	for _, in := range ins {
		c.checkInput(in)
	}
}

func (c *checker) checkInput(in broker.Input) {
	switch in := in.(type) {
	case broker.MetaLeaderChanged:
		if in.Epoch <= c.epoch {
			c.t.Fatalf("M7: leader epoch %d after %d", in.Epoch, c.epoch)
		}
		c.epoch, c.leader = in.Epoch, true
	case broker.MetaApplied:
		if in.Index != c.applied+1 {
			c.t.Fatalf("M2: MetaApplied %d after %d", in.Index, c.applied)
		}
		c.applied = in.Index
		c.appliedH[in.Index] = true
		c.committed(in.Index, in.Record)
	case broker.MetaAnswer:
		c.checkAnswer(in)
	default:
		c.t.Fatalf("unexpected input %T", in)
	}
}

func (c *checker) checkAnswer(in broker.MetaAnswer) {
	p := c.props[in.Token]
	switch {
	case p == nil || p.inc != c.inc:
		c.t.Fatalf("M3: answer for token %d, not proposed by this incarnation", in.Token)
	case p.answered:
		c.t.Fatalf("M3: proposal %d answered twice (%v, then %v)", in.Token, p.outcome,
			in.Outcome)
	case !c.leader:
		c.t.Fatalf("M7: an answer before any MetaLeaderChanged")
	}
	p.answered, p.outcome = true, in.Outcome
	switch in.Outcome {
	case broker.MetaCommitted:
		if p.index == 0 || p.index != in.Index || !c.appliedH[in.Index] {
			c.t.Fatalf("M4: proposal %d answered committed at %d, applied at %d here: %v",
				in.Token, in.Index, p.index, c.appliedH[in.Index])
		}
	case broker.MetaNotLeader, broker.MetaRejected:
		if p.index != 0 {
			c.t.Fatalf("M3: proposal %d answered %v but committed at %d", in.Token, in.Outcome,
				p.index)
		}
	case broker.MetaUnknown:
	default:
		c.t.Fatalf("M3: proposal %d: unknown outcome %d", in.Token, in.Outcome)
	}
}

// drawRecord draws a record on a few topic names, so that creations, growths,
// deletions and config changes meet, marked with its token (marker).
func (c *checker) drawRecord(tok uint64) meta.Record { return drawRecord(c.t, tok) }

func drawRecord(t *rapid.T, tok uint64) meta.Record {
	topic := rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "topic")
	var r meta.Record
	switch rapid.IntRange(0, 4).Draw(t, "kind") {
	case 0, 1:
		r = meta.Record{Kind: meta.KindTopicCreated, Topic: topic,
			Partitions: int32(rapid.IntRange(1, 4).Draw(t, "partitions")), ReplicationFactor: 1}
	case 2:
		r = meta.Record{Kind: meta.KindPartitionsAdded, Topic: topic,
			Partitions: int32(rapid.IntRange(1, 8).Draw(t, "partitions"))}
	case 3:
		r = meta.Record{Kind: meta.KindTopicDeleted, Topic: topic}
	default:
		r = meta.Record{Kind: meta.KindConfigsAltered, Topic: topic, Configs: []meta.Config{
			{Name: "retention.ms", Value: fmt.Sprint(rapid.IntRange(1, 9).Draw(t, "ms"))}}}
	}
	if rapid.IntRange(0, 5).Draw(t, "pid") == 0 {
		r = meta.Record{Kind: meta.KindProducerIDBlock, NextProducerID: int64(tok) * 1000}
	}
	r.TopicID[0] = 0xab
	binary.BigEndian.PutUint64(r.TopicID[8:], tok)
	return r
}

// marker is the token a drawn record carries in its topic id.
func marker(r meta.Record) uint64 { return binary.BigEndian.Uint64(r.TopicID[8:]) }

func imageOf(recs []meta.Record) *meta.Image {
	im := meta.NewImage()
	for _, r := range recs {
		_ = im.Apply(r) // a record that does not apply changes nothing, as in the broker
	}
	return im
}

func sameRecord(a, b meta.Record) bool { return fmt.Sprintf("%+v", a) == fmt.Sprintf("%+v", b) }
