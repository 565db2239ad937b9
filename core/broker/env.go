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
// work completes later as an Input (SyncDone, MetaCommitted, TimerFired).
//
// Ordering rules the driver must keep (docs/actors.md explains why):
//   - E1: Replies to one connection are delivered in the order the requests arrived on
//     it, whatever order the broker answers them in (net/ queues them).
//   - E2: SyncDone for a SyncLog call is delivered only after Log.Sync returned, and
//     carries its error. A sync may cover more than was asked; never less.
//   - E3: MetaCommitted for a ProposeMeta call is delivered only once the record is
//     durable in the metadata log, and records commit in proposal order.
//   - E4: A timer never fires before its time; it may fire late. A cancelled timer
//     should not fire, but one already due when CancelTimer runs may still be
//     delivered: the broker ignores ids it no longer knows.
//   - E5: Inputs are delivered one at a time; the broker never runs concurrently with
//     itself, nor is it stepped again from inside a step.
//   - E6: A broker only receives inputs meant for it: completions (SyncDone,
//     MetaCommitted, TimerFired) of effects an earlier broker of the same node asked
//     for die with that broker's process. The replica incarnation in SyncDone tells
//     topic incarnations apart, not processes.
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
	// OpenLog opens (recovering if it exists) or creates the log of one partition. It
	// runs inside the step; after Start the broker calls it at most openChunk times per
	// step (open_queue.go).
	OpenLog(tp core.TopicPartition, cfg replica.SegmentConfig) (replica.Log, error)
	// RemoveLog deletes a partition's log and its node-local state after the log was
	// closed.
	RemoveLog(tp core.TopicPartition) error
	// ProposeMeta proposes a metadata record; MetaCommitted{Token, ...} follows.
	ProposeMeta(rec meta.Record, token uint64)
	// Logger returns the node's logger (on the virtual clock in the simulator).
	Logger() *zap.Logger
}

// Input is one thing that happens to the broker. The set is closed: Step's switch over
// it panics on a type it does not know.
type Input interface{ isInput() }

// Start is the first input: the committed metadata records recovered at boot, in commit
// order. The broker rebuilds its image, opens every partition's log and begins serving.
type Start struct {
	Records []meta.Record
}

// Request is one decoded client request. ID is unique per driver; Conn names the
// connection. Msg's version (Msg.GetVersion) is the version the client used.
type Request struct {
	Conn     uint64
	ID       uint64
	ClientID string
	Msg      kmsg.Request
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

// MetaCommitted completes a ProposeMeta effect. Err is set when the record was not
// committed (e.g. the metadata log failed); the broker then answers the requests that
// waited on it with an error.
type MetaCommitted struct {
	Token  uint64
	Record meta.Record
	Err    error
}

// Drain says the node is shutting down: parked fetches are answered now with what is
// there, and new fetches no longer wait. Produces still wait for their fsyncs, which
// complete promptly.
type Drain struct{}

func (Start) isInput()         {}
func (Drain) isInput()         {}
func (Request) isInput()       {}
func (ConnClosed) isInput()    {}
func (TimerFired) isInput()    {}
func (SyncDone) isInput()      {}
func (MetaCommitted) isInput() {}

// Reply answers the request with the same Conn and ID.
type Reply struct {
	Conn  uint64
	ID    uint64
	Msg   kmsg.Response // nil: no response is sent (acks=0)
	Close bool
}
