package runtime

import (
	"fmt"
	"math"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/core/replica"
	"github.com/sluicemq/sluice/disk"
)

// loop is the event loop: it steps every input that comes through the inbox, the
// completions and the timers. Completions (fsyncs, metadata commits) are taken before
// new requests: they finish work already accepted and free the resources new requests
// would wait for. Each step holds stepMu, which a connection reader may hold instead to
// step its request itself when nothing is queued (sink.Request), so that steps stay one
// at a time (E5).
func (n *Node) loop() {
	defer close(n.loopDone)
	for {
		select {
		case in := <-n.completions:
			n.stepLocked(in, time.Time{}, false)
			continue
		default:
		}
		select {
		case in := <-n.completions:
			n.stepLocked(in, time.Time{}, false)
		case it := <-n.inbox:
			n.stepLocked(it.in, it.received, true)
		case <-n.timers.C():
			n.stepMu.Lock()
			n.fireTimers()
			n.stepMu.Unlock()
		case <-n.stopLoop:
			return
		}
	}
}

// stepLocked steps one input under stepMu; fromInbox inputs are counted off queued
// before the lock is released, so a reader that sees queued at 0 knows every input put
// in the inbox before has been stepped.
func (n *Node) stepLocked(in broker.Input, received time.Time, fromInbox bool) {
	n.stepMu.Lock()
	n.stepReceived(in, received)
	if fromInbox {
		n.queued.Add(-1)
	}
	n.stepMu.Unlock()
}

// step steps the broker with one input, then sends the replies it made: written
// directly from this goroutine when no other input waits (a one-at-a-time request is
// then answered without waking the connection's writer), else by the writers, so that a
// busy loop moves on to the next input at once. Only then are the step's fsyncs started
// (syncer.kick). The caller holds stepMu (or is Start,
// before any other goroutine runs).
func (n *Node) step(in broker.Input) { n.stepReceived(in, time.Time{}) }

// stepReceived is step for an input received at a known time (zero: unknown), which
// the metrics time from (metrics_flow.go). With a quorum, the controller and the
// lifecycle take their inputs first (cluster.go).
func (n *Node) stepReceived(in broker.Input, received time.Time) {
	n.flow.beginStep(in, received)
	n.creds.observe(in)
	n.observeMembership(in)
	now := n.now()
	switch {
	case n.cl != nil:
		n.cl.step(now, in)
	case !n.answerNoController(in):
		n.b.Step(now, in)
	}
	n.reportHandlerTime(in, now)
	n.flow.endStep()
	n.replier.Flush(len(n.inbox) == 0 && len(n.completions) == 0)
	n.syncer.kick()
}

// reportHandlerTime tells the broker how long the step that handled a request took:
// the wall time from its start (now) to here, which the broker charges to the
// request's request_percentage quota (core/broker quota_request.go). The replies'
// writing and the fsyncs that follow are not counted, as Kafka's request-handler time
// leaves out its network threads.
func (n *Node) reportHandlerTime(in broker.Input, start core.Time) {
	r, ok := in.(broker.Request)
	if !ok {
		return
	}
	now := n.now()
	ht := broker.HandlerTime{Request: r, Nanos: int64(now - start)}
	if n.cl != nil {
		n.cl.h.Step(now, ht)
		return
	}
	n.b.Step(now, ht)
}

// answerNoController answers, on a node without a quorum, DescribeQuorum (a quorum of
// one) and the controller RPCs (BrokerRegistration, BrokerHeartbeat): it runs no
// controller, so NOT_CONTROLLER.
func (n *Node) answerNoController(in broker.Input) bool {
	r, ok := in.(broker.Request)
	if !ok {
		return false
	}
	if n.answerDescribeQuorum(r) {
		return true
	}
	if _, ok := controllerRequest(r.Msg); !ok {
		return false
	}
	n.replier.Reply(broker.Reply{Conn: r.Conn, ID: r.ID, Msg: notControllerResponse(r.Msg)})
	return true
}

// fireTimers steps every timer that is due, oldest first.
func (n *Node) fireTimers() {
	n.fired = n.timers.due(n.now(), n.fired[:0])
	for _, id := range n.fired {
		n.step(broker.TimerFired{ID: id})
	}
}

// deliverCompletion hands a finished effect to the loop; false once the node stops.
func (n *Node) deliverCompletion(in broker.Input) bool {
	select {
	case n.completions <- in:
		return true
	case <-n.stopping:
		return false
	}
}

// sink is the wire server's way into the loop. It blocks while the inbox is full: that
// is the backpressure on connection readers. The server has finished delivering before
// the loop stops (Close shuts the server down first), so it cannot block forever; the
// stopLoop case is a guard.
type sink struct{ n *Node }

// Request steps r on the calling connection reader when r is the connection's only
// request in flight and the node is idle: no input queued or being stepped (queued is
// 0) and stepMu free. That spares a one-at-a-time request the hand-off to the loop
// goroutine (a wake-up of another thread, ~15 µs on a loaded VM). A connection's
// requests still reach the broker in order (its reader is the only one putting them,
// and queued at 0 means all its earlier ones were stepped); across connections there is
// no order to keep. Otherwise r goes through the inbox: a client with many requests in
// flight is served by the reader, the loop and the writer working side by side.
func (s sink) Request(r broker.Request, alone bool) {
	n := s.n
	received := n.flow.received(r)
	if alone && n.queued.Load() == 0 && n.stepMu.TryLock() {
		n.stepReceived(r, received)
		n.stepMu.Unlock()
		return
	}
	s.putReceived(r, received)
}

func (s sink) ConnClosed(conn uint64) { s.put(broker.ConnClosed{Conn: conn}) }

func (s sink) put(in broker.Input) { s.putReceived(in, time.Time{}) }

// inboxItem is an input in the inbox, with the time it was received when the metrics
// time it (zero otherwise).
type inboxItem struct {
	in       broker.Input
	received time.Time
}

func (s sink) putReceived(in broker.Input, received time.Time) {
	s.n.queued.Add(1)
	select {
	case s.n.inbox <- inboxItem{in: in, received: received}:
	case <-s.n.stopLoop:
	}
}

// env implements broker.Env. Its methods run inside Step, on whichever goroutine holds
// the step lock (the loop or a connection reader), and
// never wait for I/O other than opening or removing a log.
type env struct{ n *Node }

var _ broker.Env = env{}

// Reply records the answer in the connection's FIFO, which keeps request order (E1);
// it is sent when the step ends (Node.step).
func (e env) Reply(r broker.Reply) {
	e.n.flow.replied(r)
	e.n.replier.Reply(r)
}

// SetTimer arms a timer; the loop delivers TimerFired at or after at (E4).
func (e env) SetTimer(at core.Time, id uint64) { e.n.timers.add(e.n.now(), at, id) }

// CancelTimer drops a pending timer (E4).
func (e env) CancelTimer(id uint64) { e.n.timers.cancel(id) }

// SyncLog queues log.Sync on the sync pool; SyncDone follows once it returned (E2).
func (e env) SyncLog(tp core.TopicPartition, incarnation, token uint64, log replica.Log) {
	l, _ := log.(*nodeLog)
	e.n.flow.syncRequested(tp, token, l)
	e.n.syncer.submit(tp, incarnation, token, log)
}

// CleanLog queues the log's compaction on the cleaner worker; CleanDone follows.
func (e env) CleanLog(tp core.TopicPartition, incarnation uint64, req replica.CleanRequest,
	log replica.Log) {
	e.n.cleaner.submit(cleanJob{tp: tp, incarnation: incarnation, req: req, log: log})
}

// OpenLog opens, recovering, or creates the partition's log in logs/<topic>-<partition>.
func (e env) OpenLog(tp core.TopicPartition, cfg replica.SegmentConfig) (replica.Log, error) {
	n := e.n
	if old := n.logs[tp]; old != nil {
		return nil, fmt.Errorf("log of %s is already open", tp)
	}
	opts := disk.LogOptions{}
	if n.marks != nil {
		opts.Volatile = n.marks
	}
	pl, err := disk.OpenPartitionLogOpts(n.files, n.logDir(tp), n.state, logStatePrefix(tp),
		cfg, n.now().Millis(), n.lg, opts)
	if err != nil {
		return nil, err
	}
	l := &nodeLog{PartitionLog: pl, n: n, tp: tp}
	n.logs[tp] = l
	return l, nil
}

// RemoveLog deletes a closed partition log's files and node-local state.
func (e env) RemoveLog(tp core.TopicPartition) error {
	n := e.n
	if n.logs[tp] != nil {
		return fmt.Errorf("log of %s is still open", tp)
	}
	return disk.RemovePartitionLog(n.files, n.logDir(tp), n.state, logStatePrefix(tp))
}

// ProposeMeta queues the record for the metadata log; MetaApplied and MetaAnswer
// follow (M2–M4).
func (e env) ProposeMeta(rec meta.Record, token uint64) {
	if e.n.quorum != nil {
		e.n.quorum.Propose(rec, token)
		return
	}
	e.n.metaW.submit(rec, token)
}

// SendPeer starts an inter-broker request; its PeerReply arrives as a completion (E7).
// A request to this node itself (an AlterPartition while it leads the metadata quorum)
// goes to its own controller without leaving the process (nodehost.Host.SendLocal).
func (e env) SendPeer(p broker.PeerRequest) {
	if e.n.cl != nil && p.Node == e.n.opts.Config.NodeID {
		e.n.cl.h.SendLocal(p)
		return
	}
	e.n.peers.Send(p)
}

func (e env) Logger() *zap.Logger { return e.n.lg }

// ServingHeld times a request the broker held for its quota from here on as the
// step's (metrics_flow.go).
func (e env) ServingHeld(id uint64) { e.n.flow.servingHeld(id) }

var _ broker.HeldObserver = env{}

// LogDirSpace is the size and free space of the partition logs' filesystem (one statfs),
// for DescribeLogDirs v4: the same free space a full disk is told by (docs/limits.md).
func (e env) LogDirSpace() (totalBytes, usableBytes int64, ok bool) {
	total, usable, err := disk.Space(e.n.logsDir())
	if err != nil || total > math.MaxInt64 || usable > math.MaxInt64 {
		return 0, 0, false
	}
	return int64(total), int64(usable), true
}

var _ broker.LogDirSpacer = env{}

// logDir is the partition's directory. Topic names are limited to [a-zA-Z0-9._-], and
// the partition is the text after the last '-', so two partitions never share a name.
func (n *Node) logDir(tp core.TopicPartition) string {
	return filepath.Join(n.logsDir(), tp.String())
}

// logStatePrefix is the partition's key prefix in the state store; it ends with '/' so
// that no partition's prefix is a prefix of another's.
func logStatePrefix(tp core.TopicPartition) string { return "log/" + tp.String() + "/" }
