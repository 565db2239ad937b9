package broker

import (
	"strconv"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/core/replica"
)

// apply folds a committed metadata record into the image and brings the hosted
// replicas in line with it. Every node applies every committed record in commit order.
// A record that does not apply to the image (it was checked against an image that a
// record committed before it has since changed) changes nothing; the error says why.
func (b *Broker) apply(rec meta.Record) error {
	var before int32
	if t := b.image.Topic(rec.Topic); t != nil {
		before = t.Partitions
	}
	if err := b.image.Apply(rec); err != nil {
		b.lg.Warn("metadata record did not apply", zap.Stringer("kind", rec.Kind),
			zap.String("topic", rec.Topic), zap.Error(err))
		return err
	}
	after := int32(0)
	if t := b.image.Topic(rec.Topic); t != nil {
		after = t.Partitions
	}
	b.countPartitions(before, after)
	switch rec.Kind {
	case meta.KindTopicCreated, meta.KindPartitionsAdded:
		t := b.image.Topic(rec.Topic)
		for p := before; p < t.Partitions; p++ {
			b.queueOpen(core.TopicPartition{Topic: rec.Topic, Partition: p})
		}
		if b.opens.live {
			b.openSome() // the first chunk now, the rest in later steps (open_queue.go)
		}
	case meta.KindTopicDeleted:
		for p := int32(0); p < before; p++ {
			b.removeReplica(core.TopicPartition{Topic: rec.Topic, Partition: p})
		}
	case meta.KindConfigsAltered:
		b.hit(pConfigsApplied)
		t := b.image.Topic(rec.Topic)
		cfg := b.replicaConfig(t)
		for p := int32(0); p < t.Partitions; p++ {
			tp := core.TopicPartition{Topic: rec.Topic, Partition: p}
			if r := b.replicas[tp]; r != nil {
				hwm := r.HighWatermark()
				r.Configure(cfg)
				if r.HighWatermark() != hwm {
					// log.flush.policy=never made unsynced data visible: answer the
					// writes and fetches that were waiting for it.
					b.hit(pConfigsHWMMoved)
					b.hwmAdvanced(tp)
				}
			}
		}
	case meta.KindProducerIDBlock:
	case meta.KindClusterCreated, meta.KindBrokerRegistered, meta.KindBrokerChange,
		meta.KindPartitionChange:
		// Image only, for now: the controller (core/controller) proposes these; hosting,
		// leading and following partitions by them is issue 8's wiring step.
	default:
		core.Invariant(false, "B4", "apply: unhandled record kind %v", rec.Kind)
	}
	return nil
}

// openReplica opens tp's log with its topic's current settings.
func (b *Broker) openReplica(tp core.TopicPartition) {
	cfg := b.replicaConfig(b.image.Topic(tp.Topic))
	log, err := b.env.OpenLog(tp, cfg.Segment)
	b.noteOpen(tp, err)
	if err != nil {
		// The partition stays unhosted: clients get KAFKA_STORAGE_ERROR for it (via
		// replicaFor) and the node keeps serving everything else.
		b.lg.Error("cannot open partition log", zap.Stringer("tp", tp), zap.Error(err))
		b.hit(pOpenLogFailed)
		return
	}
	b.incarnation++
	r, err := replica.New(tp, b.incarnation, log, cfg, b.lg)
	if err != nil {
		b.lg.Error("cannot recover partition", zap.Stringer("tp", tp), zap.Error(err))
		b.noteOpen(tp, err)
		b.hit(pRecoverFailed)
		_ = log.Close()
		return
	}
	b.replicas[tp] = r
}

// removeReplica closes a deleted partition and removes its log, also when the log did
// not open (a read error at recovery): left behind, it would be recovered into the
// next topic of the same name.
func (b *Broker) removeReplica(tp core.TopicPartition) {
	b.noteOpen(tp, nil)
	b.forgetOpen(tp)
	if r := b.replicas[tp]; r != nil {
		delete(b.replicas, tp)
		b.partitionGone(tp)
		r.Close()
	}
	if err := b.env.RemoveLog(tp); err != nil {
		b.lg.Warn("cannot remove partition log", zap.Stringer("tp", tp), zap.Error(err))
	}
}

// topicConfig returns the effective value of a topic config: the topic's override if
// set, else the broker default.
func (b *Broker) topicConfig(t *meta.Topic, name string) string {
	if t != nil {
		if v, ok := t.Override(name); ok {
			return v
		}
	}
	return b.cfg.TopicDefaults[name]
}

func (b *Broker) topicConfigInt(t *meta.Topic, name string) int64 {
	v, err := strconv.ParseInt(b.topicConfig(t, name), 10, 64)
	core.Invariant(err == nil, "B5", "config %s=%q was validated but is not a number",
		name, b.topicConfig(t, name))
	return v
}

// replicaConfig resolves the settings a replica needs from a topic's overrides and the
// broker defaults.
func (b *Broker) replicaConfig(t *meta.Topic) replica.Config {
	var id [16]byte
	if t != nil {
		id = t.ID
	}
	return replica.Config{
		Segment: replica.SegmentConfig{
			TopicID:       id,
			SegmentBytes:  b.topicConfigInt(t, "segment.bytes"),
			SegmentMs:     b.topicConfigInt(t, "segment.ms"),
			IndexInterval: int(b.topicConfigInt(t, "index.interval.bytes")),
		},
		RetentionMs:          b.topicConfigInt(t, "retention.ms"),
		RetentionBytes:       b.topicConfigInt(t, "retention.bytes"),
		MaxMessageBytes:      int(b.topicConfigInt(t, "max.message.bytes")),
		FlushAlways:          b.topicConfig(t, "log.flush.policy") == "always",
		LogAppendTime:        b.topicConfig(t, "message.timestamp.type") == "LogAppendTime",
		MinInsyncReplicas:    int(b.topicConfigInt(t, "min.insync.replicas")),
		TimestampBeforeMaxMs: b.topicConfigInt(t, "message.timestamp.before.max.ms"),
		TimestampAfterMaxMs:  b.topicConfigInt(t, "message.timestamp.after.max.ms"),
		Decompressor:         b.dec,
		Probes:               b.probes,
		SnapshotEveryBatches: b.cfg.ProducerSnapshotEveryBatches,
	}
}
