package broker

// The admin queue and its typed operation records.
//
// Every metadata-changing operation is one adminOp record, queued in arrival order and
// run one at a time (serialize). An operation moves through phases: queued, proposing
// (its records are proposed; metaWaiters maps each token to it), opening (its records
// committed; it waits for the logs of new partitions, open_queue.go), writing offsets
// (a topic deletion tombstones the deleted topics' committed offsets) and done. At each
// phase change one switch over the record's type (runAdmin, adminCommitted,
// adminOpened, adminOffsetsWritten) continues it; a type the switch does not know is a
// bug (B11). The records say what each operation waits for (Pending, pending.go).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
)

// adminState is the queue of metadata-changing operations.
type adminState struct {
	busy     bool      // an operation is running (waiting for its commits)
	draining bool      // drainAdmin is on the stack
	running  adminOp   // the operation running, nil when none
	queue    []adminOp // waiting operations, oldest first
}

// adminPhase is where an admin operation stands.
type adminPhase uint8

const (
	adminQueued     adminPhase = iota // waiting behind the running operation
	adminProposing                    // its records are proposed, answers outstanding
	adminOpening                      // committed; waiting for new partitions' logs
	adminOffsets                      // waiting for offset tombstones to be durable
	adminDone                         // answered and finished
	adminForwarding                   // forwarded to the controller's node (controller_port.go)
)

func (p adminPhase) String() string {
	switch p {
	case adminQueued:
		return "queued"
	case adminProposing:
		return "proposing"
	case adminOpening:
		return "opening-logs"
	case adminOffsets:
		return "writing-offsets"
	case adminDone:
		return "done"
	case adminForwarding:
		return "forwarded"
	default:
		return fmt.Sprintf("phase(%d)", uint8(p))
	}
}

// adminOp is one queued or running admin operation. The set of types is closed: the
// op* structs below.
type adminOp interface{ base() *adminBase }

// adminBase is what every admin operation has.
type adminBase struct {
	req    Request // the client request; zero for the broker's own operations
	queued core.Time
	phase  adminPhase
	recs   []meta.Record // proposed, in order
	errs   []error       // each record's commit error, once answered
	left   int           // proposals (adminProposing) or offset writes (adminOffsets) due
}

func (a *adminBase) base() *adminBase { return a }

// opCreateTopics is a CreateTopics request; at[j] is recs[j]'s entry in resp.Topics.
type opCreateTopics struct {
	adminBase
	m      *kmsg.CreateTopicsRequest
	resp   *kmsg.CreateTopicsResponse
	at     []int
	assign [][][]int32 // with a quorum: recs[j]'s manual assignment, or nil
}

// opCreatePartitions is a CreatePartitions request; at as in opCreateTopics.
type opCreatePartitions struct {
	adminBase
	m      *kmsg.CreatePartitionsRequest
	resp   *kmsg.CreatePartitionsResponse
	at     []int
	assign [][][]int32 // with a quorum: recs[j]'s manual assignment, or nil
}

// opDeleteTopics is a DeleteTopics request; waits[i] is resp.Topics[i]'s index in recs,
// or -1.
type opDeleteTopics struct {
	adminBase
	m     *kmsg.DeleteTopicsRequest
	resp  *kmsg.DeleteTopicsResponse
	waits []int
}

// opAutoCreate is a Metadata request that auto-creates topics; failed holds the
// topics it could not create and why.
type opAutoCreate struct {
	adminBase
	m      *kmsg.MetadataRequest
	failed map[string]topicError
}

// opAlterConfigs is an AlterConfigs or IncrementalAlterConfigs request (req.Msg says
// which); at[j] is recs[j]'s entry in results.
type opAlterConfigs struct {
	adminBase
	changes      []configChange
	validateOnly bool
	results      []alterResult
	at           []int
}

// opOffsetsTopic creates __consumer_offsets (groups.go); existed: it was there when
// the operation started, so it only waits for its logs.
type opOffsetsTopic struct {
	adminBase
	existed bool
}

// opPurgeOrphans tombstones at start the committed offsets of topics that are gone
// (groups_topics.go).
type opPurgeOrphans struct{ adminBase }

// adminName names an operation for logs and Pending.
func adminName(op adminOp) string {
	switch op := op.(type) {
	case *opCreateTopics:
		return "CreateTopics"
	case *opCreatePartitions:
		return "CreatePartitions"
	case *opDeleteTopics:
		return "DeleteTopics"
	case *opAutoCreate:
		return "Metadata(auto-create)"
	case *opAlterConfigs:
		if _, ok := op.req.Msg.(*kmsg.IncrementalAlterConfigsRequest); ok {
			return "IncrementalAlterConfigs"
		}
		return "AlterConfigs"
	case *opOffsetsTopic:
		return "create-offsets-topic"
	case *opPurgeOrphans:
		return "purge-orphan-offsets"
	case *opAlterScram:
		return "AlterUserScramCredentials"
	case *opAlterQuotas:
		return "AlterClientQuotas"
	case *opCreateACLs:
		return "CreateAcls"
	case *opDeleteACLs:
		return "DeleteAcls"
	case *opForward:
		return "forwarded " + kmsg.NameForKey(op.req.Msg.Key())
	default:
		return fmt.Sprintf("%T", op)
	}
}

// serialize queues op to run once every earlier admin operation has finished. Every
// operation ends in adminFinished, after it replied.
func (ctl *adminController) serialize(op adminOp) {
	a := op.base()
	if len(ctl.admin.queue) >= maxQueuedAdmin {
		ctl.lg.Warn("too many admin requests waiting; closing the connection",
			zap.Uint64("conn", a.req.Conn), zap.Int("waiting", len(ctl.admin.queue)))
		ctl.env.Reply(Reply{Conn: a.req.Conn, ID: a.req.ID, Close: true})
		return
	}
	a.queued = ctl.now
	ctl.admin.queue = append(ctl.admin.queue, op)
	ctl.drainAdmin()
}

// drainAdmin starts queued operations while none is running. It loops rather than
// recursing so that operations finishing synchronously do not deepen the stack.
func (ctl *adminController) drainAdmin() {
	if ctl.admin.draining {
		return
	}
	ctl.admin.draining = true
	for !ctl.admin.busy && len(ctl.admin.queue) > 0 {
		op := ctl.admin.queue[0]
		ctl.admin.queue[0] = nil
		ctl.admin.queue = ctl.admin.queue[1:]
		ctl.admin.busy = true
		ctl.admin.running = op
		ctl.runAdmin(op)
	}
	if len(ctl.admin.queue) == 0 {
		ctl.admin.queue = nil // release the backing array
	}
	ctl.admin.draining = false
}

// runAdmin starts an operation: it checks it against the image as it is now and
// proposes its records.
func (ctl *adminController) runAdmin(op adminOp) {
	switch op := op.(type) {
	case *opCreateTopics:
		ctl.createTopics(op)
	case *opCreatePartitions:
		ctl.createPartitions(op)
	case *opDeleteTopics:
		ctl.deleteTopics(op)
	case *opAutoCreate:
		ctl.autoCreate(op)
	case *opAlterConfigs:
		ctl.alterConfigs(op)
	case *opOffsetsTopic:
		ctl.createOffsetsTopic(op)
	case *opAlterScram:
		ctl.alterScram(op)
	case *opAlterQuotas:
		ctl.alterQuotas(op)
	case *opCreateACLs:
		ctl.createACLs(op)
	case *opDeleteACLs:
		ctl.deleteACLs(op)
	case *opForward: // to the controller's node (admin_forward.go)
		ctl.runForward(op)
	case *opPurgeOrphans: // offsets of topics that are gone (groups_topics.go)
		ctl.tombstoneTopicOffsets(op, "topic no longer exists", nil)
	default:
		core.Invariant(false, "B11", "admin operation of unknown type %T", op)
	}
}

// adminFinished ends the running operation and starts the next one.
func (ctl *adminController) adminFinished(op adminOp) {
	a := op.base()
	core.Invariant(a.phase != adminDone, "B6", "admin operation finished twice")
	a.phase = adminDone
	if ctl.admin.running == op {
		ctl.admin.running = nil
	}
	ctl.admin.busy = false
	ctl.drainAdmin()
}

// proposeAll proposes recs in order for op; adminCommitted continues op once every
// one of them was answered (at once when recs is empty), with each record's commit
// error in op's errs.
func (ctl *adminController) proposeAll(op adminOp, recs []meta.Record) {
	a := op.base()
	a.recs, a.errs, a.left = recs, make([]error, len(recs)), len(recs)
	a.phase = adminProposing
	if len(recs) == 0 {
		ctl.adminCommitted(op)
		return
	}
	for i, rec := range recs {
		ctl.propose(rec, metaWaiter{op: op, i: i})
	}
}

// adminAnswered records one proposal's answer (metaport.go).
func (ctl *adminController) adminAnswered(op adminOp, i int, err error) {
	a := op.base()
	a.errs[i] = err
	a.left--
	if a.left == 0 {
		ctl.adminCommitted(op)
	}
}

// adminCommitted continues an operation whose proposals were all answered.
func (ctl *adminController) adminCommitted(op adminOp) {
	switch op := op.(type) {
	case *opCreateTopics, *opCreatePartitions, *opOffsetsTopic:
		ctl.afterOpens(op)
	case *opAutoCreate:
		ctl.autoCreateCommitted(op)
	case *opDeleteTopics:
		ctl.deleteTopicsCommitted(op)
	case *opAlterConfigs:
		ctl.alterConfigsCommitted(op)
	case *opAlterScram:
		ctl.alterScramCommitted(op)
	case *opAlterQuotas:
		ctl.alterQuotasCommitted(op)
	case *opCreateACLs:
		ctl.createACLsCommitted(op)
	case *opDeleteACLs:
		ctl.deleteACLsCommitted(op)
	default: // opPurgeOrphans and opForward propose nothing
		core.Invariant(false, "B11", "%s: no commit to continue", adminName(op))
	}
}

// afterOpens continues op in adminOpened once the replica manager has opened every
// log queued so far (open_queue.go).
func (ctl *adminController) afterOpens(op adminOp) {
	op.base().phase = adminOpening
	ctl.post(msgAwaitOpens{op})
}

// adminOpened continues an operation that waited for the logs of new partitions.
func (ctl *adminController) adminOpened(op adminOp) {
	switch op := op.(type) {
	case *opCreateTopics:
		ctl.createTopicsOpened(op)
	case *opCreatePartitions:
		ctl.createPartitionsOpened(op)
	case *opAutoCreate:
		ctl.post(msgAnswerMetadata{req: op.req, m: op.m, failed: op.failed})
		ctl.adminFinished(op)
	case *opOffsetsTopic:
		ctl.offsetsTopicOpened(op)
	default:
		core.Invariant(false, "B11", "%s: no open to wait for", adminName(op))
	}
}

// adminOffsetsWritten continues an operation whose offset tombstones all ended.
func (ctl *adminController) adminOffsetsWritten(op adminOp) {
	switch op := op.(type) {
	case *opDeleteTopics:
		ctl.reply(op.req, op.resp)
		ctl.adminFinished(op)
	case *opPurgeOrphans:
		ctl.adminFinished(op)
	default:
		core.Invariant(false, "B11", "%s: no offsets to write", adminName(op))
	}
}

// tombstoneTopicOffsets has the group coordinator tombstone the committed offsets of
// topics (nil: of every topic the image no longer has) for op, which continues in
// adminOffsetsWritten once every tombstone ended (msgTombstoneCount). left starts at
// one, released once the coordinator has started every write.
func (ctl *adminController) tombstoneTopicOffsets(op adminOp, why string, topics map[string]bool) {
	a := op.base()
	a.phase = adminOffsets
	a.left = 1
	ctl.post(msgTombstoneOffsets{op: op, why: why, topics: topics})
}

// tombstoneCounted follows an operation's offset tombstones: one more started
// (delta > 0) or one ended.
func (ctl *adminController) tombstoneCounted(m msgTombstoneCount) {
	if m.delta > 0 {
		m.op.base().left += m.delta
		return
	}
	ctl.adminOffsetWriteEnded(m.op)
}

// adminOffsetWriteEnded counts down an operation's offset tombstones.
func (ctl *adminController) adminOffsetWriteEnded(op adminOp) {
	a := op.base()
	if a.left--; a.left == 0 {
		ctl.adminOffsetsWritten(op)
	}
}
