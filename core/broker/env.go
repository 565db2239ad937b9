package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/core/replica"
)

// Env is everything the broker actor may ask of the world. A driver (runtime/ in
// production, sim/ in the simulator) implements it. Every method returns at once; slow
// work completes later as an Input (SyncDone, MetaAnswer, MetaApplied, TimerFired).
//
// Ordering rules the driver must keep (docs/actors.md explains why):
//   - E1: Replies to one connection are delivered in the order the requests arrived on
//     it, whatever order the broker answers them in (net/ queues them).
//   - E2: SyncDone for a SyncLog call is delivered only after Log.Sync returned, and
//     carries its error. A sync may cover more than was asked; never less.
//   - E3: the metadata port (M1–M7 below) is kept by the metadata adapter.
//   - E4: A timer never fires before its time; it may fire late. A cancelled timer
//     should not fire, but one already due when CancelTimer runs may still be
//     delivered: the broker ignores ids it no longer knows.
//   - E5: Inputs are delivered one at a time; the broker never runs concurrently with
//     itself, nor is it stepped again from inside a step.
//   - E6: A broker only receives inputs meant for it: completions (SyncDone,
//     MetaAnswer, MetaApplied, TimerFired) of effects an earlier broker of the same
//     node asked for die with that broker's process. The replica incarnation in
//     SyncDone tells topic incarnations apart, not processes.
//   - E7: every SendPeer is answered by exactly one PeerReply with its ID, unless the
//     incarnation ends first (E6): the peer's response, or Err when the request could
//     not be sent or was not answered within its TimeoutMs (no address for the node,
//     connection refused or lost, timeout, too many requests in flight to that peer).
//     With Err set the request may still have reached the peer and taken effect.
//     Replies may arrive in any order. Requests from peers reach the broker as ordinary
//     Request inputs on connections the peers opened.
//   - E8: a Reply with MuteMs > 0 mutes its connection: once the reply is delivered,
//     the driver reads (or delivers) no further request from that connection until
//     MuteMs milliseconds have passed; requests already read are still delivered (the
//     broker holds the Produce and Fetch among them, quota_hold.go). A later mute
//     extends an earlier one, never shortens it. Replies are not delayed.
//     This is how client quotas hold back a client that ignores ThrottleMillis
//     (KIP-219; quotas.go).
//
// The metadata port (ProposeMeta; Start, MetaApplied, MetaAnswer, MetaLeaderChanged).
// An incarnation is one life of the node, from its Start to its crash or stop.
//   - M1: Start comes first. It carries the committed log: a snapshot (the image at
//     index SnapshotIndex, as records that rebuild it; none when SnapshotIndex is 0)
//     and then every committed record after it, indexes SnapshotIndex+1, +2, ...
//   - M2: every node receives MetaApplied{Index, Record} for every record committed
//     after its Start, in index order, gapless (the first is the last index of Start
//     plus one) and exactly once per incarnation. A committed record never changes: a
//     later incarnation's Start holds the same record at the same index (or a snapshot
//     covering it).
//   - M3: every ProposeMeta is answered by exactly one MetaAnswer with its token, unless
//     the incarnation ends first. The answers are MetaCommitted (at index N),
//     MetaNotLeader (never committed, never will be; Leader is a hint or -1),
//     MetaRejected (never committed, never will be; the log refused it for a reason
//     other than leadership, e.g. an injected failure) and MetaUnknown (it may commit
//     later or never: if it does, it arrives as a MetaApplied like any other).
//   - M4: on the proposer, MetaApplied for index N is delivered before the answer
//     "committed at N", and that MetaApplied carries the proposed record.
//   - M5: of one proposer's records, those that commit do so in proposal order.
//   - M6: a proposal whose incarnation ended unanswered may commit or not; the next
//     Start says which. Records answered NotLeader or Rejected are never in any Start.
//   - M7: leadership arrives as MetaLeaderChanged{Leader, Epoch}, with Epoch
//     increasing within an incarnation; a node proposes whatever it believes, and
//     M3's NotLeader is the adapter's answer to a proposal it cannot take. A single
//     node is its own leader from the start (MetaLeaderChanged right after Start).
type Env interface {
	// Reply answers one request. Msg nil means "send nothing" (acks=0) but still frees
	// the request's place in the connection's queue. Close asks the driver to close the
	// connection after delivering everything before this reply.
	Reply(r Reply)
	// SetTimer asks for TimerFired{ID: id} at time at or later.
	SetTimer(at core.Time, id uint64)
	// CancelTimer drops a timer set with SetTimer that has not fired, so a wait that
	// ended early (an acks=all produce, a long poll) leaves nothing queued. Unknown or
	// fired ids are ignored.
	CancelTimer(id uint64)
	// SyncLog asks for log.Sync() to run, then SyncDone{TP, Incarnation, Token, Err}.
	SyncLog(tp core.TopicPartition, incarnation uint64, token uint64, log replica.Log)
	// CleanLog asks for the log's compaction (log.(replica.Cleaner).Clean(req)) to run
	// off the broker's thread, one at a time (log.cleaner.threads=1), then CleanDone
	// with the same TP and Incarnation. The broker has at most one in flight.
	CleanLog(tp core.TopicPartition, incarnation uint64, req replica.CleanRequest,
		log replica.Log)
	// OpenLog opens (recovering if it exists) or creates the log of one partition. It
	// runs inside the step; after Start the broker calls it at most openChunk times per
	// step (open_queue.go).
	OpenLog(tp core.TopicPartition, cfg replica.SegmentConfig) (replica.Log, error)
	// RemoveLog deletes a partition's log and its node-local state after the log was
	// closed.
	RemoveLog(tp core.TopicPartition) error
	// ProposeMeta proposes a metadata record; one MetaAnswer{Token: token} follows (M3),
	// after the record's MetaApplied if it committed (M4).
	ProposeMeta(rec meta.Record, token uint64)
	// SendPeer sends one inter-broker request to another node's Kafka listener; one
	// PeerReply{ID: p.ID} follows (E7).
	SendPeer(p PeerRequest)
	// Logger returns the node's logger (on the virtual clock in the simulator).
	Logger() *zap.Logger
}

// HeldObserver is an Env that times requests (the runtime's produce stages). The
// broker calls ServingHeld(id) in the step that serves a request it held for its
// connection's quota throttle (quota_hold.go), just before running its handler, so
// that what the handler appends and answers is timed as that request's. An Env need
// not implement it.
type HeldObserver interface {
	ServingHeld(id uint64)
}

// LogDirSpacer is an Env that knows the size and the free space of the filesystem that
// holds the partition logs (Config.LogDir), which DescribeLogDirs v4 answers. The
// broker calls LogDirSpace in the step that answers; like OpenLog it returns at once (a
// statfs). ok false, or an Env without it (the simulator), answers -1 for both:
// Kafka's "unknown". An Env need not implement it.
type LogDirSpacer interface {
	LogDirSpace() (totalBytes, usableBytes int64, ok bool)
}

// Input is one thing that happens to the broker. The set is closed: Step's switch over
// it panics on a type it does not know.
type Input interface{ isInput() }

// Start is the first input: the committed metadata recovered at boot (M1). Snapshot
// holds records that rebuild the image as of index SnapshotIndex (empty when
// SnapshotIndex is 0); Records are the committed records after it, in index order. The
// broker rebuilds its image, opens every partition's log and begins serving.
type Start struct {
	Snapshot      []meta.Record
	SnapshotIndex uint64
	Records       []meta.Record
}

// LastIndex is the index of the last committed record Start carries.
func (s Start) LastIndex() uint64 { return s.SnapshotIndex + uint64(len(s.Records)) }

// Request is one decoded client request. ID is unique per driver; Conn names the
// connection. Msg's version (Msg.GetVersion) is the version the client used.
//
// Listener names the listener the request arrived on ("" for a driver without
// listeners, such as the simulator: the broker then answers with its default advertised
// address); Metadata, DescribeCluster and FindCoordinator answer with the brokers'
// addresses on that listener, as Kafka does. Principal is who sent it, in Kafka's form:
// "User:ANONYMOUS" on a listener without authentication, "User:CN=...,O=..." for a
// verified TLS client certificate, "User:<name>" after SASL ("" counts as anonymous).
// Host is the client's IP address ("" when unknown). The authorizer decides on both
// (authorize.go).
//
// Forwarded marks an admin request another node forwarded in an Envelope (envelope.go):
// Conn and ID are the Envelope's, Principal and Host the original client's, already
// authorized by the forwarding node; its answer goes back wrapped in an
// EnvelopeResponse, and it is never forwarded again. Drivers leave it false.
type Request struct {
	Conn      uint64
	ID        uint64
	ClientID  string
	Msg       kmsg.Request
	Listener  string
	Principal string
	Host      string
	Forwarded bool
}

// ConnClosed says a connection went away; pending work for it can be dropped.
type ConnClosed struct{ Conn uint64 }

// TimerFired delivers a timer set with SetTimer.
type TimerFired struct{ ID uint64 }

// SyncDone completes a SyncLog effect.
type SyncDone struct {
	TP          core.TopicPartition
	Incarnation uint64
	Token       uint64
	Err         error
}

// CleanDone completes a CleanLog effect.
type CleanDone struct {
	TP          core.TopicPartition
	Incarnation uint64
	Result      replica.CleanResult
	Err         error
}

// MetaOutcome is how the metadata log answered a proposal (M3); meta.Outcome, which
// the controller shares.
type MetaOutcome = meta.Outcome

// The answers to a proposal (meta.Outcome's).
const (
	MetaCommitted = meta.Committed
	MetaNotLeader = meta.NotLeader
	MetaRejected  = meta.Rejected
	MetaUnknown   = meta.Unknown
)

// MetaAnswer answers one ProposeMeta (M3). Index is set for MetaCommitted, Leader for
// MetaNotLeader; Err says why for the others (for the logs).
type MetaAnswer struct {
	Token   uint64
	Outcome MetaOutcome
	Index   uint64
	Leader  int32
	Err     error
}

// MetaApplied delivers one committed metadata record, at its index in the log, on every
// node (M2). The broker applies it to its image.
type MetaApplied struct {
	Index  uint64
	Record meta.Record
}

// MetaLeaderChanged says which node leads the metadata quorum from now on (M7); Leader
// is -1 while none is known.
type MetaLeaderChanged struct {
	Leader int32
	Epoch  uint64
}

// PeerRequest is one inter-broker request (Env.SendPeer). The driver sets Msg's
// version: the highest both nodes support.
type PeerRequest struct {
	Node      int32        // the peer's node id
	ID        uint64       // chosen by the broker, unique per incarnation; echoed back
	Msg       kmsg.Request // not changed by the driver except for its version
	TimeoutMs int64        // the request fails with Err if unanswered this long
}

// PeerReply answers one SendPeer (E7): Msg is the peer's response, or Err says why
// there is none (the request's outcome is then unknown).
type PeerReply struct {
	Node int32
	ID   uint64
	Msg  kmsg.Response
	Err  error
}

// PeerLinkDown says a connection of this node's inter-broker client to node Node's
// listener closed (the peer died, the link was reset, the client closed it). With a
// metadata quorum the node's lifecycle heartbeats at once when Node is the
// controller's, so that the controller, which saw the connection close, hears from it
// again within sluice.broker.connection.loss.grace.ms (docs/controller.md). The broker
// itself does nothing with it: its requests on that connection fail with their own
// PeerReply.
type PeerLinkDown struct{ Node int32 }

// HandlerTime reports how long the step that handled Request took, in nanoseconds: the
// driver steps it right after that step (the runtime measures the step's wall time; a
// simulator would take it from its virtual time or a model, never from a real clock).
// The broker charges it to Request's request_percentage quota, if one applies
// (quota_request.go), and to nothing else. A driver that never sends it leaves
// request_percentage unenforced.
type HandlerTime struct {
	Request Request
	Nanos   int64
}

// Drain says the node is shutting down: parked fetches are answered now with what is
// there, and new fetches no longer wait. Produces still wait for their fsyncs, which
// complete promptly.
type Drain struct{}

func (Start) isInput()             {}
func (Drain) isInput()             {}
func (Request) isInput()           {}
func (ConnClosed) isInput()        {}
func (TimerFired) isInput()        {}
func (SyncDone) isInput()          {}
func (CleanDone) isInput()         {}
func (MetaAnswer) isInput()        {}
func (MetaApplied) isInput()       {}
func (MetaLeaderChanged) isInput() {}
func (PeerReply) isInput()         {}
func (PeerLinkDown) isInput()      {}
func (HandlerTime) isInput()       {}

// Reply answers the request with the same Conn and ID.
type Reply struct {
	Conn  uint64
	ID    uint64
	Msg   kmsg.Response // nil: no response is sent (acks=0)
	Close bool
	// MuteMs > 0 stops the driver reading requests from Conn for that long (E8).
	MuteMs int64
}
