package broker

// The node's shared context and its in-step message queue.
//
// The broker is being split into actors (docs/actors.md, "Plan: splitting the
// broker"): a replica manager (replica_manager.go), a group coordinator and the
// controller-side admin queue, with the Broker as their front. Each part owns its
// state; what they share while they still run inside one Step is the node: the
// settings, the Env, the clock, the metadata image (which only the front changes), the
// token counter every timer, sync and proposal id comes from, and the message queue.
// Each part keeps its own timers (timerTable), and the front routes a fired one.
//
// A part never calls into another part: it posts a typed message (messages.go), which
// the Broker routes to its recipient. The queue is drained at once, re-entrantly, so a
// message is handled exactly where the direct call it replaced ran, and the simulator's
// traces are unchanged by the split. The next step gives each part its own Step and
// makes this queue its inputs (which changes the traces once).

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/core/probe"
	"github.com/sluicemq/sluice/core/replica"
)

// node is what the broker's parts share while they run inside one Step.
type node struct {
	cfg Config
	env Env
	lg  *zap.Logger
	rnd core.Rand
	now core.Time

	image *meta.Image // changed only by the front (apply.go); the parts read it
	// leader is the metadata quorum's leader as last announced (-1: none known);
	// changed only by the front (metaport.go).
	leader int32
	// ctlPort reaches the cluster's controller on a node with a metadata quorum
	// (controller_port.go); nil on a node that is its own quorum, which proposes its
	// own records as before.
	ctlPort ControllerPort
	// quorumSize is the number of nodes of the metadata quorum, each also a broker
	// (WithQuorumSize); 0: not known.
	quorumSize int
	// membership gates leadership on this incarnation being unfenced (membership.go).
	membership membership

	nextToken uint64           // every timer, sync and proposal id (token)
	replStats ReplicationStats // counted by the front as records apply (stats.go)

	// dec inflates compressed batches for exact ListOffsets by time; nil answers a
	// compressed batch's base offset instead (see WithDecompressor).
	dec batch.Decompressor

	probes *probe.Set // code probes hit (nil: not counted; WithProbes)

	authz authzState // the authorizer and the answers it completes (authorize.go)
	// reqQuotas meters request_percentage (quota_request.go); its holds are unused.
	reqQuotas quotaState

	queue []message       // messages between parts, drained at once (post)
	route func(m message) // the Broker's router (Broker.deliver)
}

// post hands m to its recipient. The queue is drained before post returns, also when
// post runs inside the handling of another message, so each message is handled where
// the call it replaced used to run.
func (n *node) post(m message) {
	n.queue = append(n.queue, m)
	for len(n.queue) > 0 {
		next := n.queue[0]
		n.queue[0] = nil
		n.queue = n.queue[1:]
		n.route(next)
	}
	n.queue = nil
}

func (n *node) hit(id probe.ID) { n.probes.Hit(id) }

func (n *node) token() uint64 {
	n.nextToken++
	return n.nextToken
}

// reply sends resp for r, with resp's version set to the request's.
func (n *node) reply(r Request, resp kmsg.Response) { n.replyMuted(r, resp, 0) }

// topicConfig returns the effective value of a topic config: the topic's override if
// set, else the broker default.
func (n *node) topicConfig(t *meta.Topic, name string) string {
	if t != nil {
		if v, ok := t.Override(name); ok {
			return v
		}
	}
	return n.cfg.TopicDefaults[name]
}

func (n *node) topicConfigInt(t *meta.Topic, name string) int64 {
	v, err := strconv.ParseInt(n.topicConfig(t, name), 10, 64)
	core.Invariant(err == nil, "B5", "config %s=%q was validated but is not a number",
		name, n.topicConfig(t, name))
	return v
}

// replicaConfig resolves the settings a replica needs from a topic's overrides and the
// broker defaults.
func (n *node) replicaConfig(t *meta.Topic) replica.Config {
	var id [16]byte
	if t != nil {
		id = t.ID
	}
	compact, del := n.compactConfig(t)
	return replica.Config{
		Segment: replica.SegmentConfig{
			TopicID:       id,
			SegmentBytes:  n.topicConfigInt(t, "segment.bytes"),
			SegmentMs:     segmentMs(n.topicConfigInt(t, "segment.ms"), compact),
			IndexInterval: int(n.topicConfigInt(t, "index.interval.bytes")),
		},
		RetentionMs:          n.topicConfigInt(t, "retention.ms"),
		RetentionBytes:       n.topicConfigInt(t, "retention.bytes"),
		MaxMessageBytes:      int(n.topicConfigInt(t, "max.message.bytes")),
		FlushAlways:          n.topicConfig(t, "log.flush.policy") == "always",
		LogAppendTime:        n.topicConfig(t, "message.timestamp.type") == "LogAppendTime",
		MinInsyncReplicas:    int(n.topicConfigInt(t, "min.insync.replicas")),
		TimestampBeforeMaxMs: n.topicConfigInt(t, "message.timestamp.before.max.ms"),
		TimestampAfterMaxMs:  n.topicConfigInt(t, "message.timestamp.after.max.ms"),
		Decompressor:         n.dec,
		Probes:               n.probes,
		SnapshotEveryBatches: n.cfg.ProducerSnapshotEveryBatches,
		Compact:              compact,
		NoDelete:             !del,
	}
}
