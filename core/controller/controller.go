package controller

import (
	"fmt"
	"sort"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
)

// Controller is the controller actor. Every node has one; it acts only while its node
// leads the metadata quorum.
type Controller struct {
	cfg Config
	env Env
	rnd core.Rand
	lg  *zap.Logger

	started bool
	now     core.Time
	image   *meta.Image
	applied uint64 // index of the last applied record (M2)
	// registeredAt is the index at which each broker's current registration committed
	// (the snapshot's index for registrations a snapshot summarises).
	registeredAt map[int32]uint64
	// notApplied: committed records that did not apply, by index, until their answer.
	notApplied map[uint64]error

	active   bool
	epoch    uint64 // the quorum leader epoch last announced
	contacts Contacts
	// assumed holds the brokers whose contact is the one this controller gave them at
	// activation (or when it saw an earlier controller's registration), not one it
	// heard: their session runs, but they do not make a new incarnation's registration
	// a duplicate (DecideRegister); volatile.
	assumed map[int32]bool
	// beats is, for each broker, the broker epoch of its last valid heartbeat since this
	// controller became active: the registration it has heard from (electable); volatile.
	beats map[int32]int64
	// cutoffs is, for a broker whose heartbeat connection closed and that has not
	// heartbeated since, when it is fenced unless it does (connloss.go); volatile.
	cutoffs map[int32]core.Time
	// registering is, for a node id whose new incarnation's registration this
	// controller proposed, that incarnation: the contact its registration counted as
	// is the newcomer's, not the registered process's, until the record applies or the
	// registered one heartbeats (liveContacts); volatile.
	registering map[int32][16]byte
	// progress is what each broker's last valid heartbeat said it applied, and when
	// (DescribeQuorum's log end offsets); volatile, like contacts.
	progress map[int32]Progress

	pending map[uint64]*Pending // by token
	busy    map[Key]int         // proposals in flight per key
	// dirty says the image or the proposals in flight changed since the last reconcile.
	dirty     bool
	token     uint64
	timerID   uint64
	timers    map[uint64]timerKind
	expiry    timerSlot
	rebalance timerSlot
	retry     timerSlot
	// shutdowns holds the ControlledShutdown requests waiting, by node.
	shutdowns map[int32][]shutdownWait
	// elections holds ElectLeaders requests waiting for their proposals' answers.
	elections map[uint64]*election
	// reassigns holds AlterReassignments requests waiting likewise (reassign.go).
	reassigns map[uint64]*reassignWait
	// pidNext is the next producer id to hand out: beyond the image's when a block is
	// in flight, so that two blocks asked at once do not overlap.
	pidNext int64
	// parked holds the requests waiting for an answer (C7).
	parked map[uint64]bool
	// voters are the metadata quorum's voting node ids (SetVoters; unregister.go).
	voters []int32
	// epochNext is the last broker epoch proposed, so that registrations in flight at
	// once take distinct epochs (a lost one leaves a gap, which is harmless).
	epochNext int64
}

type timerKind uint8

const (
	timerExpiry timerKind = iota + 1
	timerRebalance
	timerRetry
)

type timerSlot struct {
	id uint64
	at core.Time
}

// New returns an inactive controller; Start must be its first input.
func New(cfg Config, env Env, rnd core.Rand) *Controller {
	return &Controller{cfg: cfg, env: env, rnd: rnd, lg: env.Logger().Named("controller"),
		image: meta.NewImage(), registeredAt: map[int32]uint64{},
		notApplied: map[uint64]error{}, contacts: Contacts{}, progress: map[int32]Progress{},
		cutoffs: map[int32]core.Time{}, assumed: map[int32]bool{},
		registering: map[int32][16]byte{},
		beats:       map[int32]int64{},
		pending:     map[uint64]*Pending{},
		busy:        map[Key]int{}, timers: map[uint64]timerKind{},
		shutdowns: map[int32][]shutdownWait{}, elections: map[uint64]*election{},
		parked: map[uint64]bool{}}
}

// Step delivers one input at time now.
func (c *Controller) Step(now core.Time, in Input) {
	core.Invariant(now >= c.now, "C1", "time went back from %d to %d", c.now, now)
	c.now = now
	if st, ok := in.(Start); ok {
		c.start(st)
		return
	}
	core.Invariant(c.started, "C2", "%T before Start", in)
	switch in := in.(type) {
	case MetaApplied:
		c.metaApplied(in)
	case MetaAnswer:
		c.metaAnswer(in)
	case LeaderChanged:
		c.leaderChanged(in)
	case TimerFired:
		c.timerFired(in)
	case Request:
		c.request(in)
	case BrokerConnectionClosed:
		c.connectionClosed(in)
	default:
		panic(fmt.Sprintf("controller: unknown input %T", in))
	}
	c.reconcile()
}

func (c *Controller) start(st Start) {
	core.Invariant(!c.started, "C2", "Start delivered twice")
	c.started = true
	for _, r := range st.Snapshot {
		if err := c.image.Apply(r); err != nil {
			c.lg.Error("snapshot record did not apply", zap.Stringer("kind", r.Kind),
				zap.Error(err))
		}
		if r.Kind == meta.KindBrokerRegistered {
			c.registeredAt[r.NodeID] = st.SnapshotIndex
		}
	}
	c.applied = st.SnapshotIndex
	for _, r := range st.Records {
		c.applyAt(c.applied+1, r)
	}
}

// applyAt applies the committed record at index idx.
func (c *Controller) applyAt(idx uint64, r meta.Record) {
	c.applied = idx
	if err := c.image.Apply(r); err != nil {
		c.notApplied[idx] = err
		for i := range c.notApplied {
			if i+notAppliedWindow < idx {
				delete(c.notApplied, i)
			}
		}
		return
	}
	switch r.Kind {
	case meta.KindBrokerRegistered:
		c.registeredAt[r.NodeID] = idx
	case meta.KindBrokerUnregistered:
		c.forget(r.NodeID)
	}
}

// notAppliedWindow bounds how long a refused record is remembered: its answer follows
// its MetaApplied closely (M4), or never comes here (another node proposed it).
const notAppliedWindow = 1024

func (c *Controller) metaApplied(in MetaApplied) {
	core.Invariant(in.Index == c.applied+1, "C3", "MetaApplied %d after %d", in.Index,
		c.applied)
	c.applyAt(in.Index, in.Record)
	c.dirty = true
	if c.active {
		c.answerShutdowns()
	}
}

func (c *Controller) leaderChanged(in LeaderChanged) {
	core.Invariant(in.Epoch > c.epoch, "C4", "leader epoch %d after %d", in.Epoch, c.epoch)
	c.epoch = in.Epoch
	switch {
	case in.Leader == c.cfg.NodeID && !c.active:
		c.activate()
	case in.Leader != c.cfg.NodeID && c.active:
		c.deactivate("another node leads the metadata quorum")
	}
}

// activate makes this the active controller. Broker liveness starts afresh: every
// registered broker gets a full session from now to reach this controller.
func (c *Controller) activate() {
	c.active, c.dirty = true, true
	c.contacts, c.progress = Contacts{}, map[int32]Progress{}
	c.cutoffs, c.assumed, c.beats = map[int32]core.Time{}, map[int32]bool{}, map[int32]int64{}
	c.registering = map[int32][16]byte{}
	for _, b := range c.image.Brokers() {
		c.assume(b.ID)
	}
	c.pidNext = c.image.NextProducerID()
	c.lg.Info("controller active", zap.Uint64("epoch", c.epoch),
		zap.Uint64("metadata_index", c.applied))
	if c.cfg.AutoLeaderRebalance {
		c.arm(&c.rebalance, timerRebalance, c.now.AddMillis(c.cfg.RebalanceIntervalS*1000))
	}
}

// deactivate stops acting: every waiting request is answered NOT_CONTROLLER, pending
// proposals are forgotten (their answers, if any, are ignored; a record of theirs that
// still commits is conditional and is checked by whoever leads next), timers dropped.
func (c *Controller) deactivate(why string) {
	c.lg.Info("controller inactive", zap.String("why", why))
	c.active = false
	for _, tok := range c.pendingTokens() {
		if p := c.pending[tok]; p.Request != 0 {
			c.answerPending(p, codeNotController)
		}
	}
	c.pending, c.busy = map[uint64]*Pending{}, map[Key]int{}
	for _, id := range sortedKeys(c.shutdowns) {
		for _, w := range c.shutdowns[id] {
			c.answerParked(w.req, ControlledShutdownResponse{Err: codeNotController})
		}
	}
	c.shutdowns = map[int32][]shutdownWait{}
	for _, req := range sortedKeys(c.elections) {
		c.answerParked(req, ElectLeadersResponse{Err: codeNotController})
	}
	c.elections = map[uint64]*election{}
	c.dropReassignWaits()
	for _, s := range []*timerSlot{&c.expiry, &c.rebalance, &c.retry} {
		c.disarm(s)
	}
}

func (c *Controller) timerFired(in TimerFired) {
	kind, ok := c.timers[in.ID]
	if !ok {
		return // cancelled, or set by an earlier activation (E4)
	}
	delete(c.timers, in.ID)
	switch kind {
	case timerExpiry:
		c.expiry = timerSlot{}
	case timerRetry:
		c.retry = timerSlot{}
		c.dirty = true
	case timerRebalance:
		c.rebalance = timerSlot{}
		c.rebalanceLeaders()
		c.arm(&c.rebalance, timerRebalance, c.now.AddMillis(c.cfg.RebalanceIntervalS*1000))
	}
}

// arm sets slot's timer for at, replacing the one it held.
func (c *Controller) arm(s *timerSlot, kind timerKind, at core.Time) {
	if s.id != 0 && s.at == at {
		return
	}
	c.disarm(s)
	c.timerID++
	s.id, s.at = c.timerID, at
	c.timers[s.id] = kind
	c.env.SetTimer(at, s.id)
}

func (c *Controller) disarm(s *timerSlot) {
	if s.id != 0 {
		delete(c.timers, s.id)
		c.env.CancelTimer(s.id)
		*s = timerSlot{}
	}
}

// park notes a request that will be answered later.
func (c *Controller) park(id uint64) {
	core.Invariant(!c.parked[id], "C7", "request %d is already waiting", id)
	c.parked[id] = true
}

// answerParked answers a waiting request, exactly once (C7).
func (c *Controller) answerParked(id uint64, resp Response) {
	core.Invariant(c.parked[id], "C7", "request %d answered twice or never parked", id)
	delete(c.parked, id)
	c.env.Answer(id, resp)
}

// Active says whether the controller acts (its node leads the metadata quorum).
func (c *Controller) Active() bool { return c.active }

// Image is the controller's metadata image (read only).
func (c *Controller) Image() *meta.Image { return c.image }

// Applied is the index of the last metadata record applied.
func (c *Controller) Applied() uint64 { return c.applied }

func sortedKeys[K int32 | uint64, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
