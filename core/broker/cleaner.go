package broker

// Scheduling of log compaction (cleanup.policy=compact).
//
// The broker decides when a partition is cleaned and what range (replica.PlanClean),
// one partition at a time (log.cleaner.threads=1): every log.cleaner.backoff.ms, and at
// once after a clean that succeeded, it asks the driver for a CleanLog effect. The
// driver runs the log's Clean off the broker's thread (the runtime on its cleaner
// worker, bounded by log.cleaner.io.max.bytes.per.second; the simulator as a delayed
// event) and answers CleanDone. The log swaps each cleaned segment in itself, under its
// lock (docs/storage.md, "Compaction"). The timer is armed only while some hosted
// partition is compacted, so a node without compacted topics runs as before.

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/group"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/core/replica"
)

// CleanerConfig holds the log cleaner's broker settings.
type CleanerConfig struct {
	Enable        bool    // log.cleaner.enable
	BackoffMs     int64   // log.cleaner.backoff.ms
	KeyMapBytes   int64   // log.cleaner.dedupe.buffer.size
	IOBytesPerSec float64 // log.cleaner.io.max.bytes.per.second
}

// DefaultCleanerConfig returns Kafka's defaults, except the key map: 32 MiB instead of
// 128 MiB (docs/limits.md, "Compaction").
func DefaultCleanerConfig() CleanerConfig {
	return CleanerConfig{Enable: true, BackoffMs: 15_000, KeyMapBytes: 32 << 20,
		IOBytesPerSec: math.MaxFloat64}
}

var cleanerSettingNames = []string{"log.cleaner.enable", "log.cleaner.threads",
	"log.cleaner.dedupe.buffer.size", "log.cleaner.io.max.bytes.per.second",
	"log.cleaner.backoff.ms"}

func (c *CleanerConfig) set(name, value string) (bool, error) {
	var err error
	switch name {
	case "log.cleaner.enable":
		c.Enable, err = strconv.ParseBool(value)
	case "log.cleaner.threads":
		if value != "1" {
			err = fmt.Errorf("only 1 is supported")
		}
	case "log.cleaner.dedupe.buffer.size":
		c.KeyMapBytes, err = strconv.ParseInt(value, 10, 64)
		if err == nil && c.KeyMapBytes < 1024 {
			err = fmt.Errorf("must be at least 1024")
		}
	case "log.cleaner.io.max.bytes.per.second":
		c.IOBytesPerSec, err = strconv.ParseFloat(value, 64)
		if err == nil && !(c.IOBytesPerSec >= 1) {
			err = fmt.Errorf("must be at least 1")
		}
	case "log.cleaner.backoff.ms":
		c.BackoffMs, err = strconv.ParseInt(value, 10, 64)
		if err == nil && c.BackoffMs < 1 {
			err = fmt.Errorf("must be positive")
		}
	default:
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("%s: %w", name, err)
	}
	return true, nil
}

// cleanupPolicy parses cleanup.policy: a comma-separated list of delete and compact,
// in any order (Kafka's list syntax).
func cleanupPolicy(v string) (compact, del bool, err error) {
	for _, p := range strings.Split(v, ",") {
		switch strings.TrimSpace(p) {
		case "compact":
			compact = true
		case "delete":
			del = true
		default:
			return false, false, fmt.Errorf("%q is not a list of delete and compact", v)
		}
	}
	return compact, del, nil
}

func validCleanupPolicy(v string) error {
	_, _, err := cleanupPolicy(v)
	return err
}

func floatRange(lo, hi float64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(f) {
			return fmt.Errorf("not a number: %q", v)
		}
		if f < lo || f > hi {
			return fmt.Errorf("%v is outside [%v, %v]", f, lo, hi)
		}
		return nil
	}
}

// compactConfig resolves a topic's compaction settings; del says whether retention
// applies too. __consumer_offsets is always compacted and never deleted by retention,
// whatever its cleanup.policy says (an offsets topic created before it was compacted
// has none; one altered to delete would lose live offsets): the cleaner keeps the last
// record of each group-metadata and offset key the coordinator writes, and offsets
// expire through the coordinator's tombstones (groups_expire.go).
func (n *node) compactConfig(t *meta.Topic) (c replica.CompactConfig, del bool) {
	compact, del, err := cleanupPolicy(n.topicConfig(t, "cleanup.policy"))
	core.Invariant(err == nil, "B5", "cleanup.policy %q was validated: %v",
		n.topicConfig(t, "cleanup.policy"), err)
	if t != nil && t.Name == group.OffsetsTopic {
		compact, del = true, false
	}
	ratio, err := strconv.ParseFloat(n.topicConfig(t, "min.cleanable.dirty.ratio"), 64)
	core.Invariant(err == nil, "B5", "min.cleanable.dirty.ratio was validated: %v", err)
	return replica.CompactConfig{Enabled: compact,
		MinLagMs:          n.topicConfigInt(t, "min.compaction.lag.ms"),
		MaxLagMs:          n.topicConfigInt(t, "max.compaction.lag.ms"),
		MinDirtyRatio:     ratio,
		DeleteRetentionMs: n.topicConfigInt(t, "delete.retention.ms"),
	}, del
}

// segmentMs is the roll age of a topic's active segment: segment.ms, or for a
// compacted topic max.compaction.lag.ms when that is shorter, as Kafka rolls it. The
// cleaner never touches the active segment, so without the roll a record in it would
// wait segment.ms (7 days), not max.compaction.lag.ms, to become cleanable. Like
// segment.ms, it takes effect at the next append.
func segmentMs(segmentMs int64, c replica.CompactConfig) int64 {
	if c.Enabled && c.MaxLagMs < segmentMs {
		return c.MaxLagMs
	}
	return segmentMs
}

// cleanerState is the replica manager's view of the cleaner.
type cleanerState struct {
	armed bool
	busy  bool                // a CleanLog is in flight
	last  core.TopicPartition // the partition last asked for: the next pass starts after it
	// cleanedTo is where each partition's last clean ended (its next DirtyStart); lost
	// at a restart, when the first clean maps the whole log.
	cleanedTo map[core.TopicPartition]int64
}

// armCleaner arms the cleaner's timer if it is not armed and some hosted partition is
// compacted.
func (rm *replicaManager) armCleaner() {
	if rm.cleaner.armed || !rm.cfg.Cleaner.Enable || !rm.anyCompacted() {
		return
	}
	rm.cleaner.armed = true
	rm.setTimer(rm.now.AddMillis(rm.cfg.Cleaner.BackoffMs), brokerTimer{kind: timerCleaner})
}

func (rm *replicaManager) anyCompacted() bool {
	for _, r := range rm.replicas {
		if r.Compacted() {
			return true
		}
	}
	return false
}

// cleanerPass asks for the next partition worth cleaning, in partition order after the
// last one asked for, then re-arms the timer.
func (rm *replicaManager) cleanerPass() {
	rm.cleaner.armed = false
	rm.startClean()
	rm.armCleaner()
}

// startClean issues one CleanLog if none is in flight and a partition needs it.
func (rm *replicaManager) startClean() {
	if rm.cleaner.busy || !rm.cfg.Cleaner.Enable {
		return
	}
	if rm.cleaner.cleanedTo == nil {
		rm.cleaner.cleanedTo = map[core.TopicPartition]int64{}
	}
	tps := rm.sortedPartitions()
	first := 0
	for i, tp := range tps {
		if tp == rm.cleaner.last {
			first = i + 1
		}
	}
	nowMs := rm.now.Millis()
	for i := range tps {
		tp := tps[(first+i)%len(tps)]
		r := rm.replicas[tp]
		req, ok := r.PlanClean(nowMs, rm.cleaner.cleanedTo[tp])
		if !ok {
			continue
		}
		req.KeyMapBytes = rm.cfg.Cleaner.KeyMapBytes
		req.IOBytesPerSec = rm.cfg.Cleaner.IOBytesPerSec
		rm.cleaner.busy, rm.cleaner.last = true, tp
		rm.env.CleanLog(tp, r.Incarnation(), req, r.Log())
		return
	}
}

// cleanDone records a finished clean and starts the next one after a success.
func (rm *replicaManager) cleanDone(d CleanDone) {
	rm.cleaner.busy = false
	r := rm.replicas[d.TP]
	if r == nil || r.Incarnation() != d.Incarnation {
		delete(rm.cleaner.cleanedTo, d.TP) // deleted or re-created meanwhile
		return
	}
	if d.Err != nil {
		if !errors.Is(d.Err, replica.ErrCleanAborted) {
			rm.lg.Warn("log cleaning failed", zap.Stringer("tp", d.TP), zap.Error(d.Err))
		}
		return
	}
	rm.cleaner.cleanedTo[d.TP] = d.Result.CleanedTo
	if d.TP.Topic == group.OffsetsTopic && d.Result.Segments > 0 {
		rm.hit(pOffsetsCleaned)
	}
	rm.startClean()
}
