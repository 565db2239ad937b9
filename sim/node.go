package sim

import (
	"errors"
	"fmt"
	"sort"
	"syscall"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/compress"
	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/core/nodehost"
	"github.com/sluicemq/sluice/core/replica"
	"github.com/sluicemq/sluice/disk"
	"github.com/sluicemq/sluice/linearizability"
)

// maxPausedInputs bounds the inputs a paused node may queue; past it the run fails
// (something is flooding a node that cannot answer).
const maxPausedInputs = 100_000

// simLogFiles is each node's bound on open segment files (sluice.log.max.open.files).
const simLogFiles = 6

// node is one simulated machine: a crashable in-memory disk, node-local state, and the
// real broker actor, rebuilt at every restart.
type node struct {
	w     *World
	id    int32
	fs    *disk.MemFS
	files *disk.FileCache // this incarnation's handle cache over fs
	state *disk.MemState
	marks *disk.MemMarks // tmpfs: kept across process restarts, emptied at a crash
	lg    *zap.Logger

	b      *broker.Broker
	host   *nodehost.Host // the controller and lifecycle beside b (clustered worlds)
	gen    uint64         // incarnation: effects of an older one are dropped
	up     bool
	skewNs int64
	nextID uint64 // request ids, unique per node

	paused  bool
	pauseID uint64
	pending []broker.Input

	rnd    *Rand // the broker's randomness
	crashR *Rand // torn writes at a crash
	diskR  *Rand // fsync latencies and injected disk errors
	clockR *Rand
	readR  *Rand // injected read errors (own stream: seeds without them keep their trace)
	stateR *Rand // state store errors and what a restart keeps of writes in doubt
	tripR  *Rand // crashes inside a step: whether, and after which disk operation
	rotR   *Rand // bit rot and stale writes (rot.go), likewise
	ioR    *Rand // read and write latency (iolat.go), likewise

	stepping          bool           // inside Broker.Step
	stepIO, stepSyncs int            // file operations (and fsyncs) of the current step
	busyUntil         int64          // the node's I/O keeps it busy until then
	heldReplies       []broker.Reply // replies of the current step, sent once its I/O is done

	rotted map[core.TopicPartition]bool // partitions a rot was injected in
	// resetFrom is, per partition, the highest offset at which this node's replica was
	// emptied and restarted at its leader's log start or a divergence below its own
	// (Replica.ResetTo): its producer table knows nothing of the batches below, as in
	// Kafka, whose truncateFullyAndStartAt clears the producer state too. A producer the
	// replica forgets so may be answered UNKNOWN_PRODUCER_ID once it leads (seed 3844);
	// docs/replication.md "Producer state on a replica that was emptied".
	resetFrom  map[core.TopicPartition]int64
	rots       int    // rots injected on this disk
	stales     int    // files that showed stale blocks at a crash
	rotRestart uint64 // incarnation whose corrupt read asked a restart

	slowUntil, errUntil, clogUntil int64
	metaErrUntil                   int64 // MetaErrors spell: proposals may fail
	readErrUntil                   int64 // ReadErrors spell: reads may fail
	hadDiskErr                     bool
	// wipedNeed: after a disk loss, the log end each partition must reach on this node
	// before another disk may be lost (faults_cluster.go).
	wipedNeed map[core.TopicPartition]int64
	// fetchStallUntil: until then the node's replica fetcher requests are held in
	// heldFetches, not sent (a cascade, faults_cascade.go), since fetchStallFrom.
	fetchStallUntil, fetchStallFrom int64
	heldFetches                     []func()
	disksLost                       int            // how many times (its storage id, storageID)
	wiped                           bool           // its disk was lost and it has not caught up since
	applied                         map[string]int // TopicDeleted records applied, by topic
	syncs                           map[replica.Log]*syncQueue
	timerEv                         map[uint64]uint64 // pending broker timers' event keys
	conns                           map[uint64]*conn
	// armed: a crash waits for the disk to freeze (MemFS.FreezeAfter); held buffers
	// the effects of the step running meanwhile, dropped if the step froze the disk.
	armed bool
	held  []func()
}

func newNode(w *World, id int32) *node {
	name := fmt.Sprintf("node%d", id)
	n := &node{w: w, id: id, fs: disk.NewMemFS(), state: disk.NewMemState(),
		marks: disk.NewMemMarks(),
		rnd:   newStream(w.cfg.Seed, name+"/broker"), crashR: newStream(w.cfg.Seed, name+"/crash"),
		diskR: newStream(w.cfg.Seed, name+"/disk"), clockR: newStream(w.cfg.Seed, name+"/clock"),
		readR: newStream(w.cfg.Seed, name+"/readerr"), tripR: newStream(w.cfg.Seed, name+"/trip"),
		conns: map[uint64]*conn{},
		rotR:  newStream(w.cfg.Seed, name+"/rot"), rotted: map[core.TopicPartition]bool{},
		resetFrom: map[core.TopicPartition]int64{},
		ioR:       newStream(w.cfg.Seed, name+"/io")}
	n.lg = newLogger(w, w.logOut, w.logLevel, name)
	w.meta.join(n)
	n.fs.SetFault(n.diskFault)
	n.initState()
	return n
}

// brokerNow is the wall-clock time the broker sees: virtual time plus this
// incarnation's skew.
func (n *node) brokerNow() core.Time { return core.Time(epochNs + n.w.now + n.skewNs) }

// boot starts a new incarnation: a fresh broker stepped with Start and the committed
// metadata, after which it recovers every partition from the disk.
func (n *node) boot() {
	n.gen++
	n.up = true
	n.w.tlNodeUp(n)
	n.busyUntil, n.heldReplies = 0, nil
	// A process's open files die with it: each incarnation has its own handle cache,
	// small enough that segment files are evicted (fsynced first) and reopened often.
	n.files = disk.NewFileCache(n.fs, simLogFiles)
	n.syncs = map[replica.Log]*syncQueue{}
	n.timerEv = map[uint64]uint64{}
	n.reopenState()
	if s := n.w.cfg.Faults.ClockSkewMs; s > 0 {
		n.skewNs = n.clockR.Between(-s, s) * ms
	}
	cfg := n.w.brokerCfg
	cfg.NodeID = n.id + 1
	// The real codecs: decompression is deterministic, so seeds still replay.
	opts := []broker.Option{broker.WithDecompressor(compress.Codecs{})}
	if n.w.cov != nil {
		opts = append(opts, broker.WithProbes(n.w.cov.Probes))
	}
	env := nodeEnv{n: n, gen: n.gen}
	n.host = nil
	if n.w.clustered() {
		n.host = n.newHost(env)
		opts = append(opts, broker.WithController(n.host.Port()),
			broker.WithQuorumSize(len(n.w.nodes)))
	}
	n.b = broker.New(cfg, env, n.rnd, opts...)
	if n.host != nil {
		n.host.SetBroker(n.b)
	}
	st, err := n.w.meta.start(n)
	if err != nil {
		n.w.fail("world", "node %d: metadata log unreadable: %v", n.id, err)
		return
	}
	n.step(st)
	// The model tells it who leads (M7): a single node leads from its start.
	n.w.meta.booted(n)
}

// input hands the broker one input, or queues it while the node is paused.
func (n *node) input(in broker.Input) {
	if !n.up {
		return
	}
	if n.paused || n.busy() {
		if len(n.pending) >= maxPausedInputs {
			n.w.fail("world", "node %d queued %d inputs while paused", n.id, len(n.pending))
			n.w.stopped = true
			return
		}
		n.pending = append(n.pending, in)
		return
	}
	n.step(in)
}

func (n *node) step(in broker.Input) {
	n.aclStep(in) // acl_check.go
	n.stepping, n.stepIO, n.stepSyncs = n.ioLatency(), 0, 0
	if n.armed {
		n.stepArmed(in) // crashstep.go: the step's effects wait for its disk operations
	} else {
		n.stepActors(in)
		n.noteDeletions(in)
	}
	n.stepping = false
	if n.ioLatency() && n.up {
		n.endStep()
		n.reportHandlerTime(in)
	}
}

// noteDeletions records the instant this broker applied a topic deletion: requests it
// handled before ran against the old incarnation, requests after against a new one
// (linearizability/incarnations.go). The broker applies committed records in commit
// order, at Start all of them, then each MetaApplied as it is stepped.
func (n *node) noteDeletions(in broker.Input) {
	var topics []string
	switch in := in.(type) {
	case broker.Start:
		n.applied = map[string]int{}
		for _, r := range in.Records { // a snapshot holds no deletions
			if r.Kind == meta.KindTopicDeleted {
				if n.applied[r.Topic] == 0 {
					topics = append(topics, r.Topic)
				}
				n.applied[r.Topic]++
			}
		}
	case broker.MetaApplied:
		if in.Record.Kind != meta.KindTopicDeleted {
			return
		}
		n.applied[in.Record.Topic]++
		topics = append(topics, in.Record.Topic)
	}
	for _, t := range topics {
		for real := n.w.meta.realDeletes(t, n.applied[t]); n.w.deleted[t] < real; {
			n.w.deleted[t]++
			n.w.hist.Deletions = append(n.w.hist.Deletions,
				linearizability.Deletion{Topic: t, At: n.w.now})
			n.w.tr.note("topic-deleted", int64(n.w.deleted[t]), int64(n.id))
			n.w.stats.Faults["topic-deleted"]++
		}
	}
}

// crash is a power loss: unsynced bytes are lost (the last write may tear), the broker
// and every pending effect vanish, connections break.
func (n *node) crash() {
	n.stop("crash")
	n.staleWrites()
	n.fs.Crash(n.crashR)
	n.marks.Reboot()
	n.w.hist.Crashes = append(n.w.hist.Crashes,
		linearizabilityCrash(n.id, n.w.now))
}

// restartProcess kills and restarts the process without losing the page cache (used at
// heal time so partitions that went offline after disk errors recover).
func (n *node) restartProcess() {
	n.stop("process restart")
	n.w.after(n.w.cfg.Timing.RestartDelayMs*ms, KindRestart, n.id, n.gen, 0, n.restart)
}

// stop discards the incarnation.
func (n *node) stop(why string) {
	n.lg.Info("node stopping", zap.String("why", why))
	n.w.tlNodeDown(n, why)
	n.up, n.paused, n.pending, n.b, n.host = false, false, nil, nil, nil
	n.hadDiskErr = false
	n.disarm()
	n.w.meta.nodeStopped(n)
	ids := make([]uint64, 0, len(n.conns))
	for id := range n.conns {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		n.w.resetConn(n.conns[id])
	}
	n.conns = map[uint64]*conn{}
	n.w.dropLinks(n)
	// A dead process's timers never fire: take them out of the queue (the order in
	// which they are removed does not change the order of the events left).
	for _, key := range n.timerEv {
		n.w.q.remove(key)
	}
	n.timerEv = nil
	n.gen++ // effects scheduled by the old incarnation are now stale
}

// restart boots a stopped node (a scheduled restart may find it already up).
func (n *node) restart() {
	if n.up {
		return
	}
	n.w.stats.Faults["reboot"]++
	n.boot()
}

// pause stops the node stepping for d nanoseconds.
func (n *node) pause(d int64) {
	if !n.up || n.paused {
		return
	}
	n.paused = true
	n.w.tlPause(n, true)
	n.pauseID++
	id, gen := n.pauseID, n.gen
	n.w.after(d, KindResume, n.id, id, 0, func() {
		if n.gen == gen && n.pauseID == id {
			n.resume()
		}
	})
}

// resume steps every queued input, in arrival order, at the resume time.
func (n *node) resume() {
	if !n.paused {
		return
	}
	n.paused = false
	n.w.tlPause(n, false)
	n.drain()
}

// diskFault is the MemFS fault hook: during a disk-error spell, writes and fsyncs fail
// with the configured chance; during a read-error spell, reads do.
func (n *node) diskFault(op disk.Op, path string) error {
	n.countIO(op)
	if op == disk.OpRead || op == disk.OpReadDir {
		return n.readFault(op)
	}
	if n.w.now >= n.errUntil || (op != disk.OpWrite && op != disk.OpSync) {
		return nil
	}
	if !n.diskR.Chance(n.w.cfg.Faults.DiskErrorChance) {
		return nil
	}
	n.hadDiskErr = true
	n.w.stats.Faults["disk-error-"+op.String()]++
	if n.w.tl != nil {
		n.w.tlMark(n.id, "diskerror", "injected "+op.String()+" error")
	}
	if op == disk.OpSync {
		// The log truncates what this fsync did not make durable (fsyncgate): acks=1
		// writes not yet synced are lost as in a power loss, and their offsets reused.
		n.w.hist.Crashes = append(n.w.hist.Crashes, linearizabilityCrash(n.id, n.w.now))
	}
	if n.diskR.Chance(0.5) {
		return syscall.ENOSPC
	}
	return syscall.EIO
}

// readFault fails a read with EIO during a read-error spell. A read error is not
// corruption: nothing may be truncated or served because of it.
func (n *node) readFault(op disk.Op) error {
	if n.w.now >= n.readErrUntil || !n.readR.Chance(n.w.cfg.Faults.ReadErrorChance) {
		return nil
	}
	n.hadDiskErr = true
	n.w.stats.Faults["disk-error-"+op.String()]++
	if n.w.tl != nil {
		n.w.tlMark(n.id, "diskerror", "injected "+op.String()+" error (EIO)")
	}
	return syscall.EIO
}

// fsyncDelay draws one fsync's latency, longer during a slow-disk spell.
func (n *node) fsyncDelay() int64 {
	t := n.w.cfg.Timing
	return n.slowed(n.diskR.Exp(t.FsyncFloorUs*us, t.FsyncMeanUs*us))
}

// logDir names a partition's directory on the node's disk.
func logDir(tp core.TopicPartition) string {
	return fmt.Sprintf("/data/%s-%d", tp.Topic, tp.Partition)
}

func statePrefix(tp core.TopicPartition) string {
	return fmt.Sprintf("log/%s/%d/", tp.Topic, tp.Partition)
}

// nodeEnv is the broker's Env for one incarnation. Effects asked for by a discarded
// incarnation are dropped, so nothing from before a crash leaks into the next one.
type nodeEnv struct {
	n   *node
	gen uint64
}

var _ broker.Env = nodeEnv{}

func (e nodeEnv) live() bool { return e.n.up && e.n.gen == e.gen }

// hold defers an effect to the end of the step while a crash is armed (crashstep.go).
func (e nodeEnv) hold(f func()) bool {
	if e.n.held == nil {
		return false
	}
	e.n.held = append(e.n.held, f)
	return true
}

func (e nodeEnv) Reply(r broker.Reply) {
	if e.hold(func() { e.Reply(r) }) {
		return
	}
	if e.live() {
		if e.n.w.cov != nil {
			e.n.w.cov.noteReply(r.Msg)
		}
		if !e.n.holdReply(r) {
			e.n.w.reply(e.n, r)
		}
	}
}

func (e nodeEnv) SetTimer(at core.Time, id uint64) {
	if e.hold(func() { e.SetTimer(at, id) }) {
		return
	}
	if !e.live() {
		return
	}
	n := e.n
	t := int64(at) - epochNs - n.skewNs
	key := n.w.q.cancelKey()
	n.timerEv[id] = key
	n.w.atCancellable(t, KindTimer, n.id, id, key, func() {
		if e.live() {
			delete(n.timerEv, id)
			n.input(broker.TimerFired{ID: id})
		}
	})
}

// CancelTimer takes a pending timer's event out of the queue (E4).
func (e nodeEnv) CancelTimer(id uint64) {
	if e.hold(func() { e.CancelTimer(id) }) {
		return
	}
	if !e.live() {
		return
	}
	if key, ok := e.n.timerEv[id]; ok {
		delete(e.n.timerEv, id)
		e.n.w.q.remove(key)
	}
}

func (e nodeEnv) SyncLog(tp core.TopicPartition, inc, token uint64, log replica.Log) {
	if e.hold(func() { e.SyncLog(tp, inc, token, log) }) {
		return
	}
	if !e.live() {
		return
	}
	e.n.syncLog(e, broker.SyncDone{TP: tp, Incarnation: inc, Token: token}, log)
}

// CleanLog runs the log's clean after a simulated disk latency (one fsync's worth per
// segment it may rewrite is not modelled: one draw), then delivers CleanDone. The clean
// itself runs inside that event, on the same MemFS the crashes act on, so a crash
// between the request and the event loses it, and the log's swap protocol is what a
// crash during later steps meets.
func (e nodeEnv) CleanLog(tp core.TopicPartition, inc uint64, req replica.CleanRequest,
	log replica.Log) {
	if e.hold(func() { e.CleanLog(tp, inc, req, log) }) {
		return
	}
	if !e.live() {
		return
	}
	n := e.n
	n.w.after(n.fsyncDelay(), KindClean, n.id, uint64(req.UpTo), inc, func() {
		if !e.live() {
			return
		}
		done := broker.CleanDone{TP: tp, Incarnation: inc, Err: replica.ErrCleanAborted}
		if l, ok := log.(interface {
			CleanWith(replica.CleanRequest, disk.CleanOptions) (replica.CleanResult, error)
		}); ok {
			done.Result, done.Err = l.CleanWith(req, disk.CleanOptions{Codec: compress.Codecs{}})
		}
		if n.w.compact != nil && tp == compactTP && done.Err == nil {
			n.w.compact.cleaned(done.Result.Segments, done.Result.RecordsRemoved)
		}
		if n.tripped() {
			return
		}
		n.input(done)
	})
}

func (e nodeEnv) OpenLog(tp core.TopicPartition, cfg replica.SegmentConfig) (replica.Log, error) {
	if !e.live() {
		return nil, errors.New("node is down")
	}
	n := e.n
	return openLog(n, tp, cfg)
}

func (e nodeEnv) RemoveLog(tp core.TopicPartition) error {
	if !e.live() {
		return errors.New("node is down")
	}
	if e.n.w.mutantKeepLogs {
		return nil // the checker's own test: the deleted topic's data stays behind
	}
	return removeLog(e.n, tp)
}

func (e nodeEnv) ProposeMeta(rec meta.Record, token uint64) {
	if e.hold(func() { e.ProposeMeta(rec, token) }) {
		return
	}
	if e.live() {
		e.n.w.meta.propose(e.n, rec, token)
	}
}

// SendPeer carries an inter-broker request over the simulated network (peers.go, E7).
func (e nodeEnv) SendPeer(p broker.PeerRequest) {
	if e.hold(func() { e.SendPeer(p) }) {
		return
	}
	if !e.live() {
		return
	}
	if e.n.host != nil && p.Node == e.n.id+1 {
		e.n.host.SendLocal(p) // an AlterPartition to this node's own controller
		return
	}
	e.n.w.sendPeer(e.n, e.gen, p)
}

// sendRemote is SendPeer for the controller's and lifecycle's RPCs to another node.
func (e nodeEnv) sendRemote(p broker.PeerRequest) {
	if e.hold(func() { e.sendRemote(p) }) {
		return
	}
	if e.live() {
		e.n.w.sendPeer(e.n, e.gen, p)
	}
}

func (e nodeEnv) Logger() *zap.Logger { return e.n.lg }
