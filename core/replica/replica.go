package replica

import (
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
)

// Config is what a replica needs from its topic's configuration.
type Config struct {
	Segment         SegmentConfig
	RetentionMs     int64 // -1: unbounded
	RetentionBytes  int64 // -1: unbounded
	MaxMessageBytes int
	// FlushAlways: the high-water mark only covers fsynced data, so acks=all answers and
	// reads never claim more than would survive a crash (log.flush.policy=always).
	FlushAlways   bool
	LogAppendTime bool
}

// Replica is the leader replica of one partition.
type Replica struct {
	tp          core.TopicPartition
	incarnation uint64
	log         Log
	cfg         Config
	lg          *zap.Logger
}

// New recovers a replica over an opened log.
func New(tp core.TopicPartition, incarnation uint64, log Log, cfg Config,
	lg *zap.Logger) (*Replica, error) {
	r := &Replica{tp: tp, incarnation: incarnation, log: log, cfg: cfg,
		lg: lg.With(zap.Stringer("tp", tp))}
	return r, nil
}

// Configure applies a topic config change.
func (r *Replica) Configure(cfg Config) {
	r.cfg = cfg
	r.log.Configure(cfg.Segment)
}

// Close closes the log; the replica is unusable afterwards.
func (r *Replica) Close() { _ = r.log.Close() }

// Incarnation distinguishes this replica from an earlier one of a recreated topic.
func (r *Replica) Incarnation() uint64 { return r.incarnation }
