package controller

import (
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
)

// Env is everything the controller may ask of the world. It is narrower than the
// broker's: the controller changes the cluster only by proposing records. A node wires
// it to its metadata port and timers (tokens and timer ids are the controller's own;
// the wiring keeps them apart from the broker's) and to the transport that carries
// answers back to brokers. Every method returns at once.
type Env interface {
	// Propose proposes a metadata record; one MetaAnswer{Token: token} follows, after
	// the record's MetaApplied if it committed (the metadata port's M3, M4).
	Propose(rec meta.Record, token uint64)
	// Answer answers the Request with this id.
	Answer(id uint64, resp Response)
	// SetTimer asks for TimerFired{ID: id} at time at or later.
	SetTimer(at core.Time, id uint64)
	// CancelTimer drops a timer that has not fired; a late delivery is ignored.
	CancelTimer(id uint64)
	// Logger returns the node's logger.
	Logger() *zap.Logger
}

// Input is one thing that happens to the controller; the set is closed.
type Input interface{ isInput() }

// Start is the first input: the committed metadata log, as the broker's Start (M1).
type Start struct {
	Snapshot      []meta.Record
	SnapshotIndex uint64
	Records       []meta.Record
}

// MetaApplied is one committed record at its index (M2); every node's controller gets
// every one, active or not.
type MetaApplied struct {
	Index  uint64
	Record meta.Record
}

// Outcome is how the metadata log answered a proposal (the port's M3): meta.Outcome,
// as the broker's.
type Outcome = meta.Outcome

// The answers.
const (
	Committed = meta.Committed
	NotLeader = meta.NotLeader
	Rejected  = meta.Rejected
	Unknown   = meta.Unknown
)

// MetaAnswer answers one Propose.
type MetaAnswer struct {
	Token   uint64
	Outcome Outcome
	Index   uint64
	Leader  int32
}

// LeaderChanged says which node leads the metadata quorum (M7). The controller is
// active while it names this node.
type LeaderChanged struct {
	Leader int32
	Epoch  uint64
}

// TimerFired delivers a timer set with SetTimer.
type TimerFired struct{ ID uint64 }

// Request is one RPC from a broker (or an admin request a broker forwards). ID is the
// driver's, unique among requests not yet answered; the answer goes to Env.Answer.
type Request struct {
	ID  uint64
	Msg Message
}

// BrokerConnectionClosed says a connection that carried heartbeats of broker NodeID at
// BrokerEpoch closed (the node's driver saw it go; core/nodehost tracks which
// connection carried whose heartbeats). A process that dies has its sockets closed by
// its kernel, so this comes at once after a kill -9 or a crash; a paused process or a
// network partition closes nothing. The active controller then fences the broker
// unless it heartbeats again within ConnectionLossGraceMs (connloss.go).
type BrokerConnectionClosed struct {
	NodeID      int32
	BrokerEpoch int64
}

func (Start) isInput()                  {}
func (BrokerConnectionClosed) isInput() {}
func (MetaApplied) isInput()            {}
func (MetaAnswer) isInput()             {}
func (LeaderChanged) isInput()          {}
func (TimerFired) isInput()             {}
func (Request) isInput()                {}

// Message is one RPC the controller serves; the set is closed.
type Message interface{ isMessage() }

// RegisterBroker registers a broker process (Kafka's BrokerRegistration). Incarnation
// is drawn at each process start: a retry of the same life is answered with the same
// epoch, a new life replaces the old registration unless the old one is still alive.
type RegisterBroker struct {
	NodeID      int32
	Incarnation [16]byte
	ClusterID   string
	Host        string
	Port        int32
	Rack        string
	// Listeners are all the broker's advertised listeners (Host and Port are the one
	// its peers use, inter.broker.listener.name's); empty from a broker that has one.
	Listeners []meta.Endpoint
	// StorageID is the id of the node's data directory, drawn when the directory was
	// first used (Kafka's log directory id, KIP-858); zero when unknown. A different
	// one than the previous registration's means the node's logs are gone.
	StorageID [16]byte
}

// Heartbeat says a broker is alive (Kafka's BrokerHeartbeat). MetadataIndex is the last
// metadata index it applied: a fenced broker is unfenced once it has applied its own
// registration and does not ask to stay fenced.
type Heartbeat struct {
	NodeID        int32
	BrokerEpoch   int64
	MetadataIndex uint64
	WantFence     bool
}

// AlterPartition asks to change one partition's ISR (Kafka's AlterPartition, one
// partition per request): only its leader may, naming the epochs it knows.
type AlterPartition struct {
	NodeID         int32
	BrokerEpoch    int64
	Topic          string
	Partition      int32
	LeaderEpoch    int32
	PartitionEpoch int32
	NewISR         []int32
}

// ControlledShutdown asks to move every leadership and ISR membership off a broker
// before it stops; answered once done (or NOT_CONTROLLER if this controller stops
// being active first).
type ControlledShutdown struct {
	NodeID      int32
	BrokerEpoch int64
}

// CreateTopic places a new topic's replicas on the live brokers and creates it. Name
// and configs were validated by the broker that took the CreateTopics request.
// Assignment, when set, is the client's manual assignment (one replica list per
// partition, in partition order): Partitions and ReplicationFactor then follow from it,
// and it is checked instead of placed (CheckAssignment).
type CreateTopic struct {
	Name              string
	TopicID           [16]byte
	Partitions        int32
	ReplicationFactor int16
	Configs           []meta.Config
	Assignment        [][]int32
}

// CreatePartitions grows a topic to Count partitions, placing the new ones with the
// topic's replication factor, or as Assignment says (one replica list per new
// partition). TopicID, when set, must be the topic's (the broker validated the request
// against that topic).
type CreatePartitions struct {
	Topic      string
	TopicID    [16]byte
	Count      int32
	Assignment [][]int32
}

// AllocateProducerIDs hands a broker a block of producer ids (Kafka's
// AllocateProducerIds).
type AllocateProducerIDs struct {
	NodeID      int32
	BrokerEpoch int64
}

// ElectLeaders moves leadership to each partition's preferred replica (Kafka's
// ElectLeaders, preferred election); empty Partitions means all. Unclean asks for an
// unclean election instead (election type 1): a partition without an eligible leader
// is given one, from outside the ISR when no ISR member can lead (Unclean).
type ElectLeaders struct {
	Partitions []core.TopicPartition
	Unclean    bool
}

func (RegisterBroker) isMessage()      {}
func (Heartbeat) isMessage()           {}
func (AlterPartition) isMessage()      {}
func (ControlledShutdown) isMessage()  {}
func (CreateTopic) isMessage()         {}
func (CreatePartitions) isMessage()    {}
func (AllocateProducerIDs) isMessage() {}
func (ElectLeaders) isMessage()        {}

// Response answers one Request. Err is a Kafka error code (kerr), 0 for success.
type Response interface{ ErrCode() int16 }

// RegisterBrokerResponse carries the registration's broker epoch.
type RegisterBrokerResponse struct {
	Err         int16
	BrokerEpoch int64
}

// HeartbeatResponse says how the controller sees the broker now.
type HeartbeatResponse struct {
	Err          int16
	Fenced       bool
	ShuttingDown bool
}

// AlterPartitionResponse carries the partition's state after the change (or as it is,
// for most errors, so the leader can catch up).
type AlterPartitionResponse struct {
	Err   int16
	State meta.PartitionState
}

// ControlledShutdownResponse: Err 0 when the broker leads nothing and holds no ISR
// place another replica could take.
type ControlledShutdownResponse struct{ Err int16 }

// CreateTopicResponse carries the placement.
type CreateTopicResponse struct {
	Err     int16
	Message string
	States  []meta.PartitionState
}

// CreatePartitionsResponse carries the new partitions' placement (none for a topic
// created before placement existed, which stays unassigned).
type CreatePartitionsResponse struct {
	Err     int16
	Message string
	States  []meta.PartitionState
}

// AllocateProducerIDsResponse carries the block [Start, Start+Len).
type AllocateProducerIDsResponse struct {
	Err   int16
	Start int64
	Len   int32
}

// ElectResult is one partition's preferred election outcome.
type ElectResult struct {
	TP  core.TopicPartition
	Err int16
}

// ElectLeadersResponse lists each partition's outcome, sorted.
type ElectLeadersResponse struct {
	Err     int16
	Results []ElectResult
}

func (r RegisterBrokerResponse) ErrCode() int16      { return r.Err }
func (r HeartbeatResponse) ErrCode() int16           { return r.Err }
func (r AlterPartitionResponse) ErrCode() int16      { return r.Err }
func (r ControlledShutdownResponse) ErrCode() int16  { return r.Err }
func (r CreateTopicResponse) ErrCode() int16         { return r.Err }
func (r AllocateProducerIDsResponse) ErrCode() int16 { return r.Err }
func (r CreatePartitionsResponse) ErrCode() int16    { return r.Err }
func (r ElectLeadersResponse) ErrCode() int16        { return r.Err }
