package sim

import (
	"fmt"
	"io"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"go.uber.org/zap/zapcore"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/linearizability"
)

// epochNs is the wall-clock instant virtual time 0 stands for (2026-01-01T00:00:00Z).
// Kafka timestamps and retention work on wall time, so it must look like a real date.
const epochNs = 1767225600 * int64(time.Second)

const (
	maxQueuedEvents = 1 << 20
	maxEvents       = 50_000_000
	ms              = int64(time.Millisecond)
	us              = int64(time.Microsecond)
)

type phase uint8

const (
	phaseSafety phase = iota // load and faults
	phaseHeal                // faults stopped; producers drain
	phaseFinal               // the final reader reads every partition
	phaseDone
)

// Options are how a run is observed, not what it does: they never change the trace.
type Options struct {
	// Verbose, when set, receives the event log and every node's debug log in order.
	// Otherwise logs go at Info level to a small ring buffer.
	Verbose io.Writer
	// CheckTimeout bounds porcupine per partition (0: linearizability's default);
	// CheckRetryTimeout is the longer budget of its one retry (0: the default).
	CheckTimeout      time.Duration
	CheckRetryTimeout time.Duration
	// Coverage, when set, counts the code probes of core/ and the (API, error code)
	// pairs the broker answers (coverage.go). It changes nothing in the run.
	Coverage bool
	// Timeline, when set, records node states, fault spells and client requests for
	// timeline.html (timeline.go; SeedRun.WriteTimeline). It changes nothing in the run.
	Timeline bool
}

// World is one seeded, single-threaded simulation of a Sluice cluster and its clients.
type World struct {
	// committed is the metadata image of the quorum's committed log (committedImage).
	committed        *meta.Image
	committedApplied int
	cfg              Config
	opts             Options
	now              int64 // virtual ns since epochNs
	q                eventQueue
	tr               *tracer

	netR   *Rand
	faultR *Rand

	brokerCfg broker.Config
	nodes     []*node
	meta      *metaLog
	clients   []client
	conns     map[uint64]*conn
	nextConn  uint64
	blocked   map[int32]*[2]int64 // client actor → [toNode, toClient] blocked until
	cutUntil  int64               // cuts between nodes may be in force until then

	// links are the nodes' inter-broker connections (peers.go); onPeerReply, when a
	// test sets it, sees every PeerReply before the broker does.
	links       map[[2]int32]*peerLink
	onPeerReply func(node int32, r broker.PeerReply)

	hist   linearizability.History
	phase  phase
	healAt int64
	// finalExtensions counts the extra time given to a final read still advancing.
	finalExtensions int
	// drainExtensions and drainExtra: the extra time the drain was given while
	// followers caught up (followersCatchingUp); drainMark, their log ends then.
	drainExtensions int
	drainExtra      int64
	drainMark       int64
	// replied: the epochs the answer a client is reading was served in (replyEpochs).
	replied       map[core.TopicPartition]int32
	finalRead     bool // clustered: the final read is done; the run awaits replication
	stopped       bool
	failures      []Failure
	pendingAtFail []string // the brokers' pending work at the first failure (pending.go)
	stats         Stats
	ring          *ringWriter
	logOut        zapcore.WriteSyncer
	logLevel      zapcore.Level
	final         *finalReader
	strings       map[string]string // interned record keys and values
	decoded       map[decodedKey][]linearizability.Record
	pids          map[[2]int64]string  // (producer id, epoch) handed out → to whom
	groups        map[string]*simGroup // consumer groups of the members, by name
	deleted       map[string]int       // deletions of each topic applied so far
	// mutantKeepLogs, set only by a test, makes removing a partition's log a no-op that
	// reports success: a re-created topic then recovers the deleted one's records.
	mutantKeepLogs bool
	compact        *compactState // nil unless Config.Compact.On (compact.go)
	cov            *Coverage     // nil unless Options.Coverage
	tl             *timeline     // nil unless Options.Timeline

	// answering is 1 + the index of the node whose answer a client is handling
	// (clustered worlds; 0: none), for the leader epoch the history notes (servedEpoch).
	answering int32
	// cascading: a cascade fault is under way (faults_cascade.go).
	cascading bool
	// uncommittedSeen: partitions a read-uncommitted failure was reported for.
	uncommittedSeen map[core.TopicPartition]bool

	acls *aclWorld // the ACL workload and checker (acls.go); nil when off
}

// Failure is one reason a run failed.
type Failure struct {
	Kind   string // panic, liveness, anomaly, linearizability, unexpected-error, world
	Detail string
}

func (f Failure) String() string { return f.Kind + ": " + f.Detail }

// New builds the world of cfg. It fails only on an invalid configuration.
func New(cfg Config, opts Options) (*World, error) {
	w := &World{cfg: cfg, opts: opts, tr: newTracer(), conns: map[uint64]*conn{},
		blocked: map[int32]*[2]int64{}, strings: map[string]string{},
		decoded: map[decodedKey][]linearizability.Record{}, pids: map[[2]int64]string{},
		deleted: map[string]int{}}
	w.q.limit = maxQueuedEvents
	if opts.Timeline {
		w.tl = newTimeline()
	}
	if opts.Coverage {
		w.cov = NewCoverage()
		w.cov.Seeds = 1
	}
	w.netR = newStream(cfg.Seed, "net")
	w.faultR = newStream(cfg.Seed, "faults")
	w.hist.Acks1Durable = cfg.StrictAcks1
	w.stats.Faults = map[string]int{}
	w.stats.Codes = map[string]int{}
	if opts.Verbose != nil {
		w.tr.log = opts.Verbose
		w.logOut, w.logLevel = zapcore.AddSync(opts.Verbose), zapcore.DebugLevel
	} else {
		w.ring = newRingWriter(256)
		w.logOut, w.logLevel = w.ring, zapcore.InfoLevel
	}
	bc, err := brokerConfig(cfg)
	if err != nil {
		return nil, err
	}
	w.brokerCfg = bc
	w.meta = newMetaLog(w)
	for i := 0; i < cfg.Nodes; i++ {
		w.nodes = append(w.nodes, newNode(w, int32(i)))
	}
	if cfg.Nodes > 1 {
		w.meta.scheduleMoves() // leadership of the metadata quorum moves under load
		w.cfg = clusterClients(w.cfg)
	}
	w.buildClients()
	return w, nil
}

// brokerConfig applies the run's broker settings, in name order, to the defaults.
func brokerConfig(cfg Config) (broker.Config, error) {
	bc := broker.DefaultConfig()
	settings := map[string]string{}
	if cfg.Nodes > 1 {
		settings = clusterDefaults(cfg)
	}
	for n, v := range cfg.Broker {
		settings[n] = v
	}
	names := make([]string, 0, len(settings))
	for n := range settings {
		if !isControllerSetting(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if err := bc.Set(n, settings[n]); err != nil {
			return bc, fmt.Errorf("broker setting: %w", err)
		}
	}
	return bc, nil
}

// at schedules fn at virtual time t (never in the past).
func (w *World) at(t int64, kind Kind, actor int32, a, b uint64, fn func()) {
	if t < w.now {
		t = w.now
	}
	if !w.q.push(event{at: t, kind: kind, actor: actor, a: a, b: b, fn: fn}) {
		w.fail("world", "%v (%d events queued)", errQueueFull, w.q.Len())
		w.stopped = true
	}
}

// atCancellable is at for an event that eventQueue.remove(key) may cancel.
func (w *World) atCancellable(t int64, kind Kind, actor int32, a uint64, key uint64,
	fn func()) {
	if t < w.now {
		t = w.now
	}
	if !w.q.push(event{at: t, kind: kind, actor: actor, a: a, fn: fn, ckey: key}) {
		w.fail("world", "%v (%d events queued)", errQueueFull, w.q.Len())
		w.stopped = true
	}
}

// after schedules fn d nanoseconds from now.
func (w *World) after(d int64, kind Kind, actor int32, a, b uint64, fn func()) {
	w.at(w.now+d, kind, actor, a, b, fn)
}

func (w *World) fail(kind, format string, args ...any) {
	if len(w.failures) == 0 {
		w.notePending()
	}
	if len(w.failures) < 100 {
		w.failures = append(w.failures, Failure{Kind: kind, Detail: fmt.Sprintf(format, args...)})
		if w.tl != nil {
			w.tlMark(-1, "failure", w.failures[len(w.failures)-1].String())
		}
	}
}

// Run executes the whole run and checks its history.
func (w *World) Run() (res Result) {
	defer func() {
		if p := recover(); p != nil {
			w.fail("panic", "%v\n%s", p, debug.Stack())
			res = w.result(nil)
		}
	}()
	for _, n := range w.nodes {
		n.boot()
	}
	for _, c := range w.clients {
		c.start()
	}
	w.startFaults()
	w.at(w.cfg.SafetyMs*ms, KindPhase, -1, uint64(phaseHeal), 0, w.heal)
	deadline := (w.cfg.SafetyMs + w.cfg.HealMs) * ms
	w.at(deadline, KindPhase, -1, uint64(phaseDone), 0, w.timeUp)
	w.loop()
	rep := w.check()
	return w.result(rep)
}

// loop dispatches events in (time, sequence) order until the run stops.
func (w *World) loop() {
	for !w.stopped {
		e, ok := w.q.pop()
		if !ok {
			w.fail("liveness", "no events left at %s: every actor is idle", fmtTime(w.now))
			return
		}
		w.now = e.at
		w.tr.event(&e)
		e.fn()
		if w.tr.events >= maxEvents {
			w.fail("world", "event budget of %d exhausted", maxEvents)
			return
		}
	}
}

// maxFinalExtensions bounds how often a final read still making progress gets more time.
const maxFinalExtensions = 8

// timeUp ends a run whose final read did not finish within the liveness budget. A final
// read that is still advancing (a big log read in small fetches, e.g. with tiny
// segments, since a fetch returns data from one segment as Kafka's does) gets another
// half budget, a bounded number of times: liveness asks for progress, and it is making
// some.
func (w *World) timeUp() {
	half := w.cfg.HealMs * ms / 2
	if w.phase != phaseDone && w.finalExtensions < maxFinalExtensions &&
		w.final.stillReading(w.now, half/2) {
		w.finalExtensions++
		w.after(half, KindPhase, -1, uint64(phaseDone), 0, w.timeUp)
		return
	}
	if w.phase != phaseDone && w.finalRead {
		if gaps := w.replicationGaps(); len(gaps) > 0 {
			w.fail("liveness", "replication-not-healed %dms after the faults stopped: %d "+
				"partitions not fully replicated, e.g. %s", (w.now-w.healAt)/ms, len(gaps),
				gaps[0])
		}
		w.finish()
		return
	}
	if w.phase != phaseDone {
		w.fail("liveness", "the final read did not finish within %dms after the faults "+
			"stopped (%s; %d extensions)", (w.now-w.healAt)/ms, w.final.progress(),
			w.finalExtensions)
		w.finish()
	}
}

// finish stops the event loop.
func (w *World) finish() {
	w.phase = phaseDone
	w.stopped = true
}

func (w *World) check() *linearizability.Report {
	if w.final != nil {
		w.hist.Finals = w.final.finals()
	}
	w.recordRetention()
	w.checkACLs() // acl_check.go
	if w.clustered() && w.finalRead {
		w.checkReplicas()
	}
	rep := linearizability.Check(&w.hist, linearizability.Options{Timeout: w.opts.CheckTimeout,
		RetryTimeout: w.opts.CheckRetryTimeout})
	for _, a := range rep.Anomalies {
		w.fail("anomaly", "%s", a)
	}
	for _, p := range rep.Partitions {
		if p.Result == linearizability.TimedOut {
			w.fail("linearizability-timeout", "%s: porcupine's search of %d operations ran "+
				"out of its budget twice: not shown linearizable", p.TP, p.Ops)
			continue
		}
		if !p.Linearizable() {
			w.fail("linearizability", "%s: history of %d operations is not linearizable: %s",
				p.TP, p.Ops, p.Why)
		}
	}
	for _, g := range rep.Registers {
		if g.Result == linearizability.TimedOut {
			w.fail("linearizability-timeout", "%s: porcupine's search of %d commits and "+
				"fetches ran out of its budget twice", g.Key, g.Ops)
		}
		if g.Result == porcupine.Illegal {
			w.fail("committed-offsets", "%s: %d commits and fetches are not linearizable "+
				"as a register", g.Key, g.Ops)
		}
	}
	return &rep
}

// logging reports whether a verbose log is being written (guard calls to logf with it,
// so passing runs do not pay for formatting arguments).
func (w *World) logging() bool { return w.opts.Verbose != nil }

// logf writes one line about a client or the world to the verbose log.
func (w *World) logf(who, format string, args ...any) {
	fmt.Fprintf(w.opts.Verbose, "%s CLIENT %s: %s\n", fmtTime(w.now), who, fmt.Sprintf(format, args...))
}

// LogTail returns the last log lines kept in the ring buffer (non-verbose runs).
func (w *World) LogTail() string {
	if w.ring == nil {
		return ""
	}
	var b strings.Builder
	_, _ = w.ring.WriteTo(&b)
	return b.String()
}

// History returns the recorded history (after Run).
func (w *World) History() *linearizability.History { return &w.hist }

// Now returns the current virtual time in nanoseconds since the run's epoch.
func (w *World) Now() int64 { return w.now }

// buildClients creates the admin, producers and readers, in that order (actor ids
// from 100 upwards; nodes use 0..Nodes-1).
func (w *World) buildClients() {
	actor := int32(100)
	w.clients = append(w.clients, newAdmin(w, actor))
	for i, spec := range w.cfg.Producers {
		actor++
		w.clients = append(w.clients, newProducer(w, actor, i, spec))
	}
	for i, spec := range w.cfg.Readers {
		actor++
		w.clients = append(w.clients, newReader(w, actor, i, spec))
	}
	for i, spec := range w.cfg.Committers {
		actor++
		w.clients = append(w.clients, newCommitter(w, actor, i, spec))
	}
	for i, spec := range w.cfg.Members {
		actor++
		w.clients = append(w.clients, newMember(w, actor, i, spec))
	}
	for i, spec := range w.cfg.Vandals {
		actor++
		w.clients = append(w.clients, newVandal(w, actor, i, spec))
	}
	if w.cfg.Deletes.On && len(w.cfg.deletableTopics()) > 0 {
		actor++
		w.clients = append(w.clients, newDeleter(w, actor, w.clients[0].(*admin)))
	}
	if w.cfg.Audit.On {
		actor++
		w.clients = append(w.clients, newAuditor(w, actor))
	}
	if w.cfg.Zombie.On {
		actor++
		w.clients = append(w.clients, newZombie(w, actor, w.cfg.Zombie))
	}
	if w.cfg.Compact.On {
		actor = w.buildCompact(actor)
	}
	w.addACLClients(actor) // acl_check.go
}
