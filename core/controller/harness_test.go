package controller

import (
	"math/rand"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
)

// fakeEnv records what the controller asks for.
type fakeEnv struct {
	onPropose func(meta.Record)
	proposals []proposal
	answers   map[uint64][]Response
	timers    map[uint64]core.Time
}

type proposal struct {
	rec   meta.Record
	token uint64
}

func (e *fakeEnv) Propose(rec meta.Record, token uint64) {
	if e.onPropose != nil {
		e.onPropose(rec)
	}
	e.proposals = append(e.proposals, proposal{rec, token})
}
func (e *fakeEnv) Answer(id uint64, r Response)     { e.answers[id] = append(e.answers[id], r) }
func (e *fakeEnv) SetTimer(at core.Time, id uint64) { e.timers[id] = at }
func (e *fakeEnv) CancelTimer(id uint64)            { delete(e.timers, id) }
func (e *fakeEnv) Logger() *zap.Logger              { return zap.NewNop() }

// harness drives one controller through a metadata log that commits its proposals in
// order when told to (commit), or answers them unknown (to commit later or never) or
// not-leader. It keeps the committed log and an image of it of its own.
type harness struct {
	t     require.TestingT
	env   *fakeEnv
	c     *Controller
	now   core.Time
	log   []meta.Record
	image *meta.Image
	late  []proposal // answered unknown, to commit at the next commit (M5)
	epoch uint64
	reqID uint64
	// refused counts committed records that did not apply to the harness's image.
	refused int
	// onCommit sees every partition change that applied, with the state before it.
	onCommit func(rec meta.Record, before meta.PartitionState)
}

func newHarness(t require.TestingT, cfg Config, seed int64) *harness {
	env := &fakeEnv{answers: map[uint64][]Response{}, timers: map[uint64]core.Time{}}
	h := &harness{t: t, env: env, now: core.Time(1_000_000_000_000), image: meta.NewImage()}
	h.c = New(cfg, env, rand.New(rand.NewSource(seed)))
	h.c.Step(h.now, Start{})
	h.lead()
	return h
}

// lead makes the controller's node the quorum leader (a new epoch).
func (h *harness) lead() {
	h.epoch++
	h.c.Step(h.now, LeaderChanged{Leader: h.c.cfg.NodeID, Epoch: h.epoch})
}

// commitRecord appends rec to the log and delivers it.
func (h *harness) commitRecord(rec meta.Record) uint64 {
	h.log = append(h.log, rec)
	before, _, _ := h.image.Partition(rec.Topic, rec.Partition)
	if err := h.image.Apply(rec); err != nil {
		h.refused++
	} else if rec.Kind == meta.KindPartitionChange && h.onCommit != nil {
		h.onCommit(rec, before)
	}
	idx := uint64(len(h.log))
	h.c.Step(h.now, MetaApplied{Index: idx, Record: rec})
	return idx
}

// take removes the oldest proposal not answered yet.
func (h *harness) take() (proposal, bool) {
	if len(h.env.proposals) == 0 {
		return proposal{}, false
	}
	p := h.env.proposals[0]
	h.env.proposals = h.env.proposals[1:]
	return p, true
}

// commitOne commits the oldest proposal (after any late ones before it, M5).
func (h *harness) commitOne() bool {
	p, ok := h.take()
	if !ok {
		return false
	}
	h.commitLate()
	idx := h.commitRecord(p.rec)
	h.c.Step(h.now, MetaAnswer{Token: p.token, Outcome: Committed, Index: idx})
	return true
}

func (h *harness) commitLate() {
	late := h.late
	h.late = nil
	for _, p := range late {
		h.commitRecord(p.rec)
	}
}

// unknownOne answers the oldest proposal unknown; it commits later when commits is set.
func (h *harness) unknownOne(commits bool) {
	if p, ok := h.take(); ok {
		if commits {
			h.late = append(h.late, p)
		}
		h.c.Step(h.now, MetaAnswer{Token: p.token, Outcome: Unknown})
	}
}

// notLeaderOne answers the oldest proposal not-leader, and the rest of them too (they
// were proposed to a log this node no longer leads).
func (h *harness) notLeaderOne() {
	for {
		p, ok := h.take()
		if !ok {
			return
		}
		h.c.Step(h.now, MetaAnswer{Token: p.token, Outcome: NotLeader, Leader: -1})
	}
}

// settle commits until nothing is proposed.
func (h *harness) settle() {
	for i := 0; h.commitOne(); i++ {
		require.Less(h.t, i, 100000, "the controller keeps proposing")
	}
	h.commitLate()
}

// advance moves time and fires due timers.
func (h *harness) advance(ms int64) {
	h.now = h.now.AddMillis(ms)
	for {
		var due uint64
		for id, at := range h.env.timers {
			if at <= h.now && (due == 0 || id < due) {
				due = id
			}
		}
		if due == 0 {
			return
		}
		delete(h.env.timers, due)
		h.c.Step(h.now, TimerFired{ID: due})
	}
}

// ask sends a request and returns its id.
func (h *harness) ask(m Message) uint64 {
	h.reqID++
	h.c.Step(h.now, Request{ID: h.reqID, Msg: m})
	return h.reqID
}

// answer returns the one answer to request id (failing if there are several), or nil.
func (h *harness) answer(id uint64) Response {
	a := h.env.answers[id]
	require.LessOrEqual(h.t, len(a), 1, "request %d answered %d times", id, len(a))
	if len(a) == 0 {
		return nil
	}
	return a[0]
}

// register registers node (incarnation inc) and settles; it returns the epoch.
func (h *harness) register(node int32, inc byte, rack string) int64 {
	id := h.ask(RegisterBroker{NodeID: node, Incarnation: [16]byte{inc}, ClusterID: "c",
		Host: "h", Port: 9000 + node, Rack: rack})
	h.settle()
	r := h.answer(id).(RegisterBrokerResponse)
	require.Zero(h.t, r.Err)
	return r.BrokerEpoch
}

// beat sends a heartbeat from node at its epoch, caught up with the log, and settles.
func (h *harness) beat(node int32, epoch int64) HeartbeatResponse {
	id := h.ask(Heartbeat{NodeID: node, BrokerEpoch: epoch,
		MetadataIndex: uint64(len(h.log))})
	r := h.answer(id).(HeartbeatResponse)
	h.settle()
	return r
}

// cluster registers and unfences nodes 1..n (racks r0, r1, ... when racks is set).
func (h *harness) cluster(n int, racks int) map[int32]int64 {
	epochs := map[int32]int64{}
	for i := int32(1); i <= int32(n); i++ {
		rack := ""
		if racks > 0 {
			rack = string(rune('a' + int(i)%racks))
		}
		epochs[i] = h.register(i, 1, rack)
		h.beat(i, epochs[i])
	}
	return epochs
}

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.ClusterID = "c"
	return cfg
}

// state returns a partition's state in the harness's image.
func (h *harness) state(topic string, p int32) meta.PartitionState {
	s, assigned, ok := h.image.Partition(topic, p)
	require.True(h.t, ok && assigned, "%s-%d", topic, p)
	return s
}
