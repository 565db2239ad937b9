package broker

// Messages between the broker's parts.
//
// Every call from one part of the broker into another (the replica manager, the group
// coordinator, the controller-side admin queue; docs/actors.md) is one of these typed
// messages, posted on the node's queue (node.post) and routed by Broker.deliver with
// one exhaustive switch. They are delivered at once, in the order the direct calls
// they replaced ran.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
)

// message is one message between parts. The set is closed: the msg* types below.
type message interface{ isMessage() }

// msgDurable (replica manager → group coordinator): tp's high-water mark may have
// moved to hwm; the offset writes it covers are durable. short: the ISR of an assigned
// tp is below min.insync.replicas (they are answered NOT_ENOUGH_REPLICAS_AFTER_APPEND).
type msgDurable struct {
	tp    core.TopicPartition
	hwm   int64
	short bool
}

// msgOffsetsRole (replica manager → group coordinator): the role of an assigned
// offsets partition was applied; leading says whether this node now leads it, in
// epoch (groups_load.go).
type msgOffsetsRole struct {
	tp      core.TopicPartition
	leading bool
	epoch   int32
}

// msgPartitionFailed (replica manager → group coordinator): nothing waiting on tp will
// become durable in this incarnation of its log; code is why.
type msgPartitionFailed struct {
	tp   core.TopicPartition
	code int16
}

// msgAwaitOpens (controller → replica manager): continue op once every log queued so
// far is open.
type msgAwaitOpens struct{ op adminOp }

// msgLogsOpened (replica manager → controller): the logs op waited for are open (or
// failed to open: the operation checks which).
type msgLogsOpened struct{ op adminOp }

// msgAppendInternal (group coordinator → replica manager): append an offset write's
// batch to tp, unless the coordinator is overloaded (then REQUEST_TIMED_OUT, if tp has
// no error of its own). Answered by msgAppended.
type msgAppendInternal struct {
	write      *offsetWrite // the coordinator's record, opaque to the replica manager
	tp         core.TopicPartition
	batch      []byte
	overloaded bool
}

// msgAppended (replica manager → group coordinator): where an offset write went
// (offset: durable once the high-water mark reaches it), or the code it failed with.
type msgAppended struct {
	write  *offsetWrite
	tp     core.TopicPartition
	offset int64
	code   int16
}

// msgEnsureOffsetsTopic (group coordinator → controller): create __consumer_offsets.
// Answered by msgLoadOffsets (when it exists) and msgOffsetsTopicEnded.
type msgEnsureOffsetsTopic struct{}

// msgLoadOffsets (controller → group coordinator): the offsets topic exists with its
// logs open; replay it.
type msgLoadOffsets struct{ partitions int32 }

// msgOffsetsTopicEnded (controller → group coordinator): the creation of the offsets
// topic ended, either way; run or fail the writes that waited for it.
type msgOffsetsTopicEnded struct{}

// msgPurgeOrphans (group coordinator → controller): offsets of topics that are gone
// were found at load; tombstone them as an admin operation (opPurgeOrphans).
type msgPurgeOrphans struct{}

// msgTombstoneOffsets (controller → group coordinator): tombstone for op the offsets
// of topics (nil: of every topic the image no longer has). Answered by
// msgTombstoneCount.
type msgTombstoneOffsets struct {
	op     adminOp
	why    string
	topics map[string]bool
}

// msgTombstoneCount (group coordinator → controller): delta 1, one more tombstone
// write of op started; -1, one ended (or, once, every write was started).
type msgTombstoneCount struct {
	op    adminOp
	delta int
}

// msgConnThrottled (any part → replica manager): an answer throttled conn's client
// until until under its request quota; hold the Produce and Fetch it sent ahead
// (quota_hold.go).
type msgConnThrottled struct {
	conn  uint64
	until core.Time
}

// msgAnswerMetadata (controller → front): the topics a Metadata request auto-created
// were created (or failed); answer it from the image.
type msgAnswerMetadata struct {
	req    Request
	m      *kmsg.MetadataRequest
	failed map[string]topicError
}

func (msgAnswerMetadata) isMessage()     {}
func (msgConnThrottled) isMessage()      {}
func (msgDurable) isMessage()            {}
func (msgOffsetsRole) isMessage()        {}
func (msgPartitionFailed) isMessage()    {}
func (msgAwaitOpens) isMessage()         {}
func (msgLogsOpened) isMessage()         {}
func (msgAppendInternal) isMessage()     {}
func (msgAppended) isMessage()           {}
func (msgEnsureOffsetsTopic) isMessage() {}
func (msgLoadOffsets) isMessage()        {}
func (msgOffsetsTopicEnded) isMessage()  {}
func (msgPurgeOrphans) isMessage()       {}
func (msgTombstoneOffsets) isMessage()   {}
func (msgTombstoneCount) isMessage()     {}

// deliver routes one message to the part it is for.
func (b *Broker) deliver(m message) {
	rm, gc, ctl := b.replicaManager, b.groupCoordinator, b.adminController
	switch m := m.(type) {
	case msgDurable:
		gc.offsetWritesDurable(m)
	case msgOffsetsRole:
		gc.offsetsRoleChanged(m)
	case msgPartitionFailed:
		gc.offsetWritesFailed(m.tp, m.code)
	case msgAwaitOpens:
		rm.awaitOpens(m.op)
	case msgLogsOpened:
		ctl.adminOpened(m.op)
	case msgAppendInternal:
		rm.appendInternal(m)
	case msgAppended:
		gc.offsetsAppended(m)
	case msgEnsureOffsetsTopic:
		ctl.queueOffsetsTopic()
	case msgLoadOffsets:
		gc.loadOffsets(m.partitions)
	case msgOffsetsTopicEnded:
		gc.offsetsCreationEnded()
	case msgPurgeOrphans:
		ctl.serialize(&opPurgeOrphans{})
	case msgTombstoneOffsets:
		gc.tombstoneTopics(m)
	case msgTombstoneCount:
		ctl.tombstoneCounted(m)
	case msgAnswerMetadata:
		b.reply(m.req, b.metadataResponse(m.req.Listener, m.m, m.failed))
	case msgConnThrottled:
		rm.holdConn(m.conn, m.until)
	default:
		core.Invariant(false, "B11", "message of unknown type %T", m)
	}
}
