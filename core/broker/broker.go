package broker

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/core/probe"
)

// Broker is the node actor. Create it with New, then Step it with Start first.
//
// It is the front of the node's parts (docs/actors.md): it applies committed metadata
// to the image, routes requests to the part that serves them and delivers the
// messages between parts (messages.go). The parts still run inside its Step and share
// the node (node.go); their fields are promoted so that the front reaches them.
type Broker struct {
	*node
	*replicaManager
	*groupCoordinator
	*adminController

	started bool
	replay  replayState // where the Start replay is (apply.go)

	metaPort metaPortState // the metadata port's position (metaport.go)
}

// Option changes how New builds a broker: dependencies the node injects beyond Env.
type Option func(*Broker)

// WithDecompressor lets the broker look inside compressed batches (package compress
// provides Kafka's codecs). Without it, ListOffsets by time answers a compressed
// batch's first offset rather than the exact record.
func WithDecompressor(d batch.Decompressor) Option { return func(b *Broker) { b.dec = d } }

// WithProbes makes the broker, its replicas and its group coordinator count the code
// probes they pass into s (package probe); the simulator reads them for its coverage
// report.
func WithProbes(s *probe.Set) Option { return func(b *Broker) { b.probes = s } }

// New returns a broker that will serve once it has been stepped with Start.
func New(cfg Config, env Env, rnd core.Rand, opts ...Option) *Broker {
	n := &node{cfg: cfg, env: env, lg: env.Logger(), rnd: rnd, image: meta.NewImage(),
		leader: -1}
	rm := newReplicaManager(n)
	b := &Broker{node: n, replicaManager: rm, groupCoordinator: newGroupCoordinator(n, rm),
		adminController: newAdminController(n, rm)}
	n.route = b.deliver
	for _, o := range opts {
		o(b)
	}
	return b
}

// Step hands the broker one input at time now. now must not go backwards.
func (b *Broker) Step(now core.Time, in Input) {
	core.Invariant(now >= b.now, "B1", "time went backwards: %d after %d", now, b.now)
	b.now = now
	switch in := in.(type) {
	case Start:
		b.start(in)
	case Request:
		b.request(in)
	case ConnClosed:
		b.connClosed(in.Conn)
	case TimerFired:
		b.timerFired(in.ID)
	case SyncDone:
		b.syncDone(in)
	case CleanDone:
		b.replicaManager.cleanDone(in)
	case MetaAnswer:
		b.metaAnswer(in)
	case MetaApplied:
		b.metaApplied(in)
	case MetaLeaderChanged:
		b.metaLeaderChanged(in)
	case PeerReply:
		b.peerReply(in)
	case PeerLinkDown:
		// The lifecycle's concern (core/nodehost); the broker's requests fail alone.
	case ControllerAnswer:
		b.controllerAnswered(in)
	case Drain:
		b.drain()
	case HandlerTime:
		b.chargeHandlerTime(in)
	default:
		panic(fmt.Sprintf("broker: unknown input %T", in))
	}
}

func (b *Broker) start(in Start) {
	core.Invariant(!b.started, "B2", "Start delivered twice")
	b.started = true
	b.metaPort.applied = in.LastIndex()
	b.metaPort.leader, b.leader = -1, -1
	b.replayLog(append(append([]meta.Record(nil), in.Snapshot...), in.Records...))
	b.opens.live = true
	b.checkUnfenced()
	b.applyRoles()
	b.armRetention()
	b.replicaManager.armCleaner()
	b.startGroups()
	b.lg.Info("broker started", zap.Int32("node", b.cfg.NodeID),
		zap.Int("topics", len(b.image.TopicNames())), zap.Int("partitions", len(b.replicas)))
}

// replay applies the committed metadata at start. A topic's records before its last
// deletion describe incarnations that are gone: they only update the image, without
// opening their logs. Opening and then removing them, as applying them live did, would
// remove what the partition directories hold now, which is the data of the incarnation
// created after that deletion (the simulator found acknowledged writes to a re-created
// topic lost at the next restart). A topic whose last record is its deletion has its
// logs removed again: a crash between the deletion's commit and its apply leaves them.
//
// A node that left a partition's replicas and joined them again later in the log keeps
// the log it holds: removing it at the leave would throw away what it fetched since
// the join (replayState).
func (b *Broker) replayLog(recs []meta.Record) {
	lastDelete := map[string]int{}
	b.replay.lastHere = map[core.TopicPartition]int{}
	for i, rec := range recs {
		switch {
		case rec.Kind == meta.KindTopicDeleted:
			lastDelete[rec.Topic] = i
		case rec.Kind == meta.KindPartitionChange &&
			slices.Contains(rec.State.Replicas, b.cfg.NodeID):
			b.replay.lastHere[core.TopicPartition{Topic: rec.Topic, Partition: rec.Partition}] = i
		}
	}
	defer func() { b.replay = replayState{} }()
	for i, rec := range recs {
		b.replay.at = i
		j, deleted := lastDelete[rec.Topic]
		switch {
		case !deleted || i > j:
			_ = b.apply(rec) // logged; at replay nobody waits on it
		case i < j:
			if err := b.image.Apply(rec); err != nil {
				b.lg.Warn("metadata record did not apply", zap.Stringer("kind", rec.Kind),
					zap.String("topic", rec.Topic), zap.Error(err))
			}
		default:
			b.hit(pReplayDeletion)
			b.replayDeletion(rec, recs[i+1:])
		}
	}
}

// replayDeletion applies a topic's last deletion at start: its partitions' logs are
// removed unless the topic was created again later (then they are the new one's).
func (b *Broker) replayDeletion(rec meta.Record, later []meta.Record) {
	var parts int32
	if t := b.image.Topic(rec.Topic); t != nil {
		parts = t.Partitions
	}
	if err := b.image.Apply(rec); err != nil {
		b.lg.Warn("metadata record did not apply", zap.Stringer("kind", rec.Kind),
			zap.String("topic", rec.Topic), zap.Error(err))
		return
	}
	for _, r := range later {
		if r.Topic == rec.Topic {
			return
		}
	}
	for p := int32(0); p < parts; p++ {
		tp := core.TopicPartition{Topic: rec.Topic, Partition: p}
		if err := b.env.RemoveLog(tp); err != nil {
			b.lg.Warn("cannot remove partition log", zap.Stringer("tp", tp), zap.Error(err))
		}
	}
}

// replayState is where the Start replay is: the index of the record it applies, and
// per partition the index of the last PartitionChange naming this node a replica.
type replayState struct {
	at       int
	lastHere map[core.TopicPartition]int
}

// request routes one client request to its handler. Every path ends in exactly one
// Reply for the request (invariant B3), now or later.
func (b *Broker) request(r Request) {
	if !b.started {
		b.lg.Warn("request before start", zap.Uint64("conn", r.Conn))
		b.env.Reply(Reply{Conn: r.Conn, ID: r.ID, Close: true})
		return
	}
	if !b.authorizeRequest(r) { // refused whole, and answered (authorize.go)
		return
	}
	switch m := r.Msg.(type) {
	case *kmsg.ProduceRequest:
		if !b.heldByQuota(r) { // a throttled connection's requests wait (quota_hold.go)
			b.handleProduce(r, m)
		}
	case *kmsg.FetchRequest:
		if !b.heldByQuota(r) {
			b.handleFetch(r, m)
		}
	case *kmsg.ListOffsetsRequest:
		b.reply(r, b.handleListOffsets(m))
	case *kmsg.MetadataRequest:
		b.handleMetadata(r, m)
	case *kmsg.CreateTopicsRequest:
		b.handleCreateTopics(r, m)
	case *kmsg.DeleteTopicsRequest:
		b.handleDeleteTopics(r, m)
	case *kmsg.DeleteRecordsRequest:
		b.handleDeleteRecords(r, m)
	case *kmsg.OffsetForLeaderEpochRequest:
		b.reply(r, b.handleOffsetForLeaderEpoch(m))
	case *kmsg.InitProducerIDRequest:
		b.handleInitProducerID(r, m)
	case *kmsg.DescribeConfigsRequest:
		b.reply(r, b.handleDescribeConfigs(m))
	case *kmsg.AlterConfigsRequest:
		b.handleAlterConfigs(r, m)
	case *kmsg.IncrementalAlterConfigsRequest:
		b.handleIncrementalAlterConfigs(r, m)
	case *kmsg.CreatePartitionsRequest:
		b.handleCreatePartitions(r, m)
	case *kmsg.DescribeClusterRequest:
		b.reply(r, b.handleDescribeCluster(r.Listener, m))
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		b.reply(r, b.handleDescribeUserScramCredentials(m))
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		b.handleAlterUserScramCredentials(r, m)
	case *kmsg.DescribeClientQuotasRequest:
		b.reply(r, b.handleDescribeClientQuotas(m))
	case *kmsg.AlterClientQuotasRequest:
		b.handleAlterClientQuotas(r, m)
	case *kmsg.DescribeACLsRequest:
		b.reply(r, b.handleDescribeACLs(m))
	case *kmsg.CreateACLsRequest:
		b.handleCreateACLs(r, m)
	case *kmsg.DeleteACLsRequest:
		b.handleDeleteACLs(r, m)
	case *kmsg.AlterPartitionAssignmentsRequest:
		b.handleAlterPartitionReassignments(r, m)
	case *kmsg.ElectLeadersRequest:
		b.handleElectLeaders(r, m)
	case *kmsg.ListPartitionReassignmentsRequest:
		b.reply(r, b.handleListPartitionReassignments(m))
	case *kmsg.UnregisterBrokerRequest:
		b.handleUnregisterBroker(r, m)
	case *kmsg.EnvelopeRequest:
		b.handleEnvelope(r, m)
	case *kmsg.DescribeLogDirsRequest:
		b.reply(r, b.handleDescribeLogDirs(m))
	case *kmsg.DescribeProducersRequest:
		b.reply(r, b.handleDescribeProducers(m))
	default:
		if b.routeGroupRequest(r) {
			return
		}
		// net/ only passes keys listed in SupportedVersions; anything else is a bug there,
		// but a client must not be able to crash the node with it.
		b.lg.Warn("request for an API the broker does not serve",
			zap.Int16("key", r.Msg.Key()), zap.Uint64("conn", r.Conn))
		b.env.Reply(Reply{Conn: r.Conn, ID: r.ID, Close: true})
	}
}
