package broker

// The test harness: a Broker driven by a fake Env with in-memory logs, a queued
// metadata log and a manual clock. Every request and response passes through the kmsg
// codec at the request's version (as net/ would), so version-specific fields are
// exercised by every test, and the harness checks the broker's reply contract (exactly
// one reply per request, at the request's version and key).
//
//	h := newHarness(t, func(c *Config) { c.NumPartitions = 1 })
//	resp := h.do(&kmsg.MetadataRequest{Version: 12}).(*kmsg.MetadataResponse)
//	id := h.send(req)      // no delivery of commits or syncs
//	h.settle()             // deliver pending metadata commits and log syncs
//	h.advance(time.Second) // fire due timers in time order
//	h.restart()            // new Broker over the same metadata log and logs
//	h.crash()              // restart, losing uncommitted proposals and unsynced data

import (
	"errors"
	"math/rand"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/core/replica"
	"github.com/sluicemq/sluice/core/replica/replicatest"
)

// maxSettleRounds bounds settle and advance: a broker that keeps producing work forever
// is a bug the test should report rather than hang on.
const maxSettleRounds = 10_000

// harnessStart is the harness clock's origin (2026-01-01T00:00:00Z).
const harnessStart = core.Time(1767225600 * int64(time.Second))

type fakeTimer struct {
	at  core.Time
	seq uint64
	id  uint64
}

type proposal struct {
	rec   meta.Record
	token uint64
}

// cleanReq is one CleanLog effect.
type cleanReq struct {
	tp  core.TopicPartition
	inc uint64
	req replica.CleanRequest
	log replica.Log
}

type syncReq struct {
	tp          core.TopicPartition
	incarnation uint64
	token       uint64
	log         replica.Log
}

// fakeEnv implements Env for one harness. It outlives restarts: the metadata log
// (committed) and the partition logs (logs) are the node's durable state.
type fakeEnv struct {
	t  testing.TB
	lg *zap.Logger

	requests   map[uint64]kmsg.Request // by request ID, to check replies against
	replies    map[uint64]Reply
	replyOrder []uint64

	timers    []fakeTimer // sorted by (at, seq)
	cancelled int         // timers dropped by CancelTimer before firing
	timerSeq  uint64
	proposals []proposal
	peerReqs  []PeerRequest
	syncs     []syncReq
	cleans    []cleanReq
	// servedHeld: the requests ServingHeld named, in order (HeldObserver).
	servedHeld []uint64

	committed []meta.Record // the durable metadata log, in commit order
	logs      map[core.TopicPartition]*replicatest.MemLog
	removed   []core.TopicPartition

	// Fault injection and knobs.
	metaErr           error // proposals delivered while set fail with it
	openErr           func(tp core.TopicPartition) error
	batchesPerSegment int // for logs created from now on
	// disk, when set, opens disk logs instead of MemLogs (offsets_clean_test.go): logs
	// that compact when a test runs their cleans.
	disk *diskLogs
	// logDirSpace, when set, is the log dir's total and usable bytes (LogDirSpacer).
	logDirSpace []int64
}

func newFakeEnv(t testing.TB) *fakeEnv {
	return &fakeEnv{t: t, lg: zaptest.NewLogger(t), requests: map[uint64]kmsg.Request{},
		replies: map[uint64]Reply{}, logs: map[core.TopicPartition]*replicatest.MemLog{}}
}

func (e *fakeEnv) Reply(r Reply) {
	e.t.Helper()
	if _, dup := e.replies[r.ID]; dup {
		e.t.Errorf("request %d answered twice (invariant B3)", r.ID)
		return
	}
	if req, ok := e.requests[r.ID]; ok && r.Msg != nil {
		if r.Msg.Key() != req.Key() || r.Msg.GetVersion() != req.GetVersion() {
			e.t.Errorf("request %d (key %d v%d) answered with key %d v%d", r.ID, req.Key(),
				req.GetVersion(), r.Msg.Key(), r.Msg.GetVersion())
		}
		r.Msg = roundTripResponse(e.t, r.Msg)
	}
	e.replies[r.ID] = r
	e.replyOrder = append(e.replyOrder, r.ID)
}

// ServingHeld records a held request about to be served; it must not be answered yet.
func (e *fakeEnv) ServingHeld(id uint64) {
	if _, done := e.replies[id]; done {
		e.t.Errorf("ServingHeld(%d) after its reply", id)
	}
	e.servedHeld = append(e.servedHeld, id)
}

var _ HeldObserver = (*fakeEnv)(nil)

// LogDirSpace answers logDirSpace; not ok while it is unset.
func (e *fakeEnv) LogDirSpace() (int64, int64, bool) {
	if e.logDirSpace == nil {
		return 0, 0, false
	}
	return e.logDirSpace[0], e.logDirSpace[1], true
}

var _ LogDirSpacer = (*fakeEnv)(nil)

func (e *fakeEnv) SetTimer(at core.Time, id uint64) {
	e.timerSeq++
	e.timers = append(e.timers, fakeTimer{at: at, seq: e.timerSeq, id: id})
	sort.Slice(e.timers, func(i, j int) bool {
		if e.timers[i].at != e.timers[j].at {
			return e.timers[i].at < e.timers[j].at
		}
		return e.timers[i].seq < e.timers[j].seq
	})
}

// CancelTimer drops a pending timer, as both drivers do (E4).
func (e *fakeEnv) CancelTimer(id uint64) {
	for i, t := range e.timers {
		if t.id == id {
			e.timers = append(e.timers[:i], e.timers[i+1:]...)
			e.cancelled++
			return
		}
	}
}

func (e *fakeEnv) SyncLog(tp core.TopicPartition, incarnation, token uint64, log replica.Log) {
	e.syncs = append(e.syncs, syncReq{tp, incarnation, token, log})
}

// CleanLog records the request; a test answers it with CleanDone.
func (e *fakeEnv) CleanLog(tp core.TopicPartition, inc uint64, req replica.CleanRequest,
	log replica.Log) {
	e.cleans = append(e.cleans, cleanReq{tp: tp, inc: inc, req: req, log: log})
}

func (e *fakeEnv) OpenLog(tp core.TopicPartition, cfg replica.SegmentConfig) (replica.Log,
	error) {
	if e.openErr != nil {
		if err := e.openErr(tp); err != nil {
			return nil, err
		}
	}
	if e.disk != nil {
		return e.disk.open(tp, cfg)
	}
	if l, ok := e.logs[tp]; ok {
		l.Reopen(cfg)
		return l, nil
	}
	l := replicatest.NewMemLog(cfg)
	l.BatchesPerSegment = e.batchesPerSegment
	e.logs[tp] = l
	return l, nil
}

func (e *fakeEnv) RemoveLog(tp core.TopicPartition) error {
	l, ok := e.logs[tp]
	if !ok {
		return errors.New("fakeEnv: no such log")
	}
	if !l.Closed {
		e.t.Errorf("RemoveLog(%v) before the log was closed", tp)
	}
	delete(e.logs, tp)
	e.removed = append(e.removed, tp)
	return nil
}

func (e *fakeEnv) ProposeMeta(rec meta.Record, token uint64) {
	e.proposals = append(e.proposals, proposal{rec, token})
}

// SendPeer records an inter-broker request; a test answers it with a PeerReply (E7).
func (e *fakeEnv) SendPeer(p PeerRequest) { e.peerReqs = append(e.peerReqs, p) }

func (e *fakeEnv) Logger() *zap.Logger { return e.lg }

// harness drives one Broker. Fields may be set by tests between steps.
type harness struct {
	t      *testing.T
	cfg    Config
	env    *fakeEnv
	b      *Broker
	now    core.Time
	nextID uint64
	seed   int64

	// holdMeta / holdSyncs keep settle (and do) from delivering metadata commits / log
	// syncs, so a test can look at the state while they are outstanding.
	holdMeta, holdSyncs bool
	// holdTimers keeps settle from firing timers due now (advance still fires them).
	holdTimers bool

	// brokerOpts are passed to New at every boot (injected dependencies).
	brokerOpts []Option

	// With a metadata quorum (quorum_harness_test.go): onApplied sees every committed
	// record after the broker, extra delivers the controller's work and returns how
	// much it delivered, and leader is the quorum leader announced at boot (0: this
	// node).
	onApplied func(idx uint64, rec meta.Record)
	extra     func() int
	leader    int32
	// incarnation, when set, makes the broker a cluster member registering it
	// (SetMember, membership.go) at its next boot.
	incarnation *[16]byte
}

// newHarness starts a broker with DefaultConfig changed by opts.
func newHarness(t *testing.T, opts ...func(*Config)) *harness {
	cfg := DefaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	h := &harness{t: t, cfg: cfg, env: newFakeEnv(t), now: harnessStart, seed: 1}
	h.boot()
	return h
}

// boot creates a broker over the env's durable state and starts it.
func (h *harness) boot() {
	h.b = New(h.cfg, h.env, rand.New(rand.NewSource(h.seed)), h.brokerOpts...)
	h.seed++
	if h.incarnation != nil {
		h.b.SetMember(*h.incarnation)
	}
	h.step(Start{Records: slices.Clone(h.env.committed)})
	leader := h.cfg.NodeID
	if h.leader != 0 {
		leader = h.leader
	}
	h.step(MetaLeaderChanged{Leader: leader, Epoch: 1})
}

func (h *harness) step(in Input) { h.b.Step(h.now, in) }

// send steps a request on connection 1 and returns its ID; nothing is delivered.
func (h *harness) send(req kmsg.Request) uint64 { return h.sendOn(1, req) }

// sendOn is send on a given connection. The request goes through the codec first.
func (h *harness) sendOn(conn uint64, req kmsg.Request) uint64 {
	h.t.Helper()
	h.nextID++
	id := h.nextID
	decoded := roundTripRequest(h.t, req)
	h.env.requests[id] = decoded
	h.step(Request{Conn: conn, ID: id, ClientID: "harness", Msg: decoded})
	return id
}

// reply returns the answer to request id, if there is one yet.
func (h *harness) reply(id uint64) (kmsg.Response, bool) {
	r, ok := h.env.replies[id]
	return r.Msg, ok
}

// do sends req, settles until it is answered, and returns the answer (nil for a
// deliberate no-response reply). It fails the test when no answer comes.
func (h *harness) do(req kmsg.Request) kmsg.Response {
	h.t.Helper()
	id := h.send(req)
	for range maxSettleRounds {
		if resp, ok := h.reply(id); ok {
			return resp
		}
		if h.deliver() == 0 {
			break
		}
	}
	resp, ok := h.reply(id)
	require.True(h.t, ok, "no reply to %T (key %d v%d)", req, req.Key(), req.GetVersion())
	return resp
}

// deliver completes every metadata proposal and log sync queued now (unless held) and
// returns how many it completed.
func (h *harness) deliver() int {
	n := 0
	if !h.holdMeta {
		n += h.deliverMeta()
	}
	if !h.holdSyncs {
		n += h.deliverSyncs()
	}
	if h.extra != nil {
		n += h.extra()
	}
	if n == 0 {
		n += h.fireDue()
	}
	return n
}

// fireDue fires the timers due by now (a broker continuing work in a later step, as
// opening a big creation's logs does), oldest first, unless timers are held; it returns
// how many it fired. The runtime and the simulator deliver such timers unprompted.
func (h *harness) fireDue() int {
	n := 0
	for !h.holdTimers && len(h.env.timers) > 0 && h.env.timers[0].at <= h.now {
		tm := h.env.timers[0]
		h.env.timers = h.env.timers[1:]
		h.step(TimerFired{ID: tm.id})
		n++
	}
	return n
}

// deliverMeta commits the queued proposals in order (M5), or answers them Rejected
// while env.metaErr is set; a committed one is applied (MetaApplied) before its answer
// (M4).
func (h *harness) deliverMeta() int {
	ps := h.env.proposals
	h.env.proposals = nil
	for _, p := range ps {
		if h.env.metaErr != nil {
			h.step(MetaAnswer{Token: p.token, Outcome: MetaRejected, Err: h.env.metaErr})
			continue
		}
		idx := h.commitMeta(p.rec)
		h.step(MetaAnswer{Token: p.token, Outcome: MetaCommitted, Index: idx})
	}
	return len(ps)
}

// commitMeta appends rec to the durable metadata log and applies it (MetaApplied).
func (h *harness) commitMeta(rec meta.Record) uint64 {
	h.env.committed = append(h.env.committed, rec)
	idx := uint64(len(h.env.committed))
	h.step(MetaApplied{Index: idx, Record: rec})
	if h.onApplied != nil {
		h.onApplied(idx, rec)
	}
	return idx
}

// deliverSyncs runs log.Sync for every queued sync, then reports it done (E2).
func (h *harness) deliverSyncs() int {
	ss := h.env.syncs
	h.env.syncs = nil
	for _, s := range ss {
		err := s.log.Sync()
		h.step(SyncDone{TP: s.tp, Incarnation: s.incarnation, Token: s.token, Err: err})
	}
	return len(ss)
}

// settle delivers until nothing is left to deliver.
func (h *harness) settle() {
	h.t.Helper()
	for range maxSettleRounds {
		if h.deliver() == 0 {
			return
		}
	}
	h.t.Fatalf("still delivering after %d rounds", maxSettleRounds)
}

// advance moves the clock forward by d, firing every timer due by then in time order
// (each at its own time) and settling after each.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	target := h.now + core.Time(d)
	// Work left pending by a request answered early (a write's fsync) completes first,
	// as it would within milliseconds, before any later timer fires.
	h.settle()
	for range maxSettleRounds {
		if len(h.env.timers) == 0 || h.env.timers[0].at > target {
			h.now = target
			h.settle()
			return
		}
		tm := h.env.timers[0]
		h.env.timers = h.env.timers[1:]
		h.now = max(h.now, tm.at)
		h.step(TimerFired{ID: tm.id})
		h.settle()
	}
	h.t.Fatalf("timers still firing after %d rounds", maxSettleRounds)
}

// restart replaces the broker with a new one over the same committed metadata and the
// same logs, after delivering everything outstanding (a clean shutdown). Timers of the
// old broker are dropped.
func (h *harness) restart() {
	h.settle()
	h.env.timers = nil
	h.boot()
}

// crash restarts without delivering: proposals not yet committed are lost, and every
// log loses what no sync covered.
func (h *harness) crash() {
	h.env.proposals, h.env.syncs, h.env.timers = nil, nil, nil
	for _, l := range h.env.logs {
		l.Crash()
	}
	h.boot()
}

// roundTripRequest encodes req at its version and decodes it again, as net/ would hand
// it to the broker.
func roundTripRequest(t testing.TB, req kmsg.Request) kmsg.Request {
	t.Helper()
	out := kmsg.RequestForKey(req.Key())
	require.NotNil(t, out, "unknown key %d", req.Key())
	out.SetVersion(req.GetVersion())
	require.NoError(t, out.ReadFrom(req.AppendTo(nil)), "decode %T v%d", req,
		req.GetVersion())
	return out
}

// roundTripResponse encodes resp at its version and decodes it again, as a client
// would see it.
func roundTripResponse(t testing.TB, resp kmsg.Response) kmsg.Response {
	t.Helper()
	out := kmsg.ResponseForKey(resp.Key())
	out.SetVersion(resp.GetVersion())
	require.NoError(t, out.ReadFrom(resp.AppendTo(nil)), "decode %T v%d", resp,
		resp.GetVersion())
	return out
}

// maxVersion is the highest version the broker serves for key.
func maxVersion(key kmsg.Key) int16 {
	v, ok := VersionFor(int16(key))
	if !ok {
		panic("key not served")
	}
	return v.Max
}

// versions lists every served version of key, lowest first.
func versions(key kmsg.Key) []int16 {
	v, _ := VersionFor(int16(key))
	var out []int16
	for i := v.Min; i <= v.Max; i++ {
		out = append(out, i)
	}
	return out
}
