package runtime

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	kafkanet "github.com/sluicemq/sluice/net"
)

// The slow-request log: a request answered later than Options.SlowRequest
// (sluice.request.slow.log.ms) gets one warning line with its API, version, error code
// and time, and a Produce its stages (queue, held, append, fsync, replication; see
// metrics_flow.go) when the node keeps them (an HTTP listener). APIs that wait by design
// are not logged: Fetch (a long poll waits up to its MaxWait), JoinGroup and SyncGroup
// (a rebalance waits for the group). The node's logger samples repeated lines, so a
// storm of slow requests cannot flood the log.

// slowLog is the slow-request part of the wire server's observer.
type slowLog struct {
	lg        *zap.Logger
	threshold time.Duration
	stages    bool // Produce is logged by flowMetrics, with its stages
}

// waitsByDesign says whether a request of key may take long without being slow.
func waitsByDesign(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.Fetch, kmsg.JoinGroup, kmsg.SyncGroup:
		return true
	}
	return false
}

// RequestDone logs one answered request if it was slow.
func (s *slowLog) RequestDone(key, version int16, resp kmsg.Response, elapsed time.Duration) {
	if elapsed < s.threshold || waitsByDesign(key) ||
		(s.stages && kmsg.Key(key) == kmsg.Produce) {
		return
	}
	s.lg.Warn("slow request", zap.String("api", apiName(key)), zap.Int16("version", version),
		zap.String("error", errorName(responseError(resp))),
		zap.Float64("elapsed_ms", ms(elapsed)))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// observers calls each of a list of observers in turn.
type observers []kafkanet.RequestObserver

func (o observers) RequestDone(key, version int16, resp kmsg.Response, elapsed time.Duration) {
	for _, x := range o {
		x.RequestDone(key, version, resp, elapsed)
	}
}

// slowProduce logs a Produce slower than the threshold with its stages; answered in
// its step, it has only queue and append.
func (f *flowMetrics) slowProduce(t *produceTiming, now time.Time, parked bool) {
	if f.slow == nil || now.Sub(t.received) < f.slow.threshold {
		return
	}
	fields := []zap.Field{zap.Float64("elapsed_ms", ms(now.Sub(t.received))),
		zap.Float64("queue_ms", ms(t.queued))}
	if t.held > 0 {
		fields = append(fields, zap.Float64("held_ms", ms(t.held)))
	}
	if !parked {
		fields = append(fields, zap.Float64("append_ms", ms(now.Sub(t.start))))
	} else {
		synced := t.fsynced
		if t.fsyncsPending > 0 || synced.IsZero() {
			synced = now
		}
		fields = append(fields, zap.Float64("append_ms", ms(t.end.Sub(t.start))),
			zap.Float64("fsync_ms", ms(synced.Sub(t.end))),
			zap.Float64("replication_ms", ms(now.Sub(synced))),
			zap.Int("partitions", len(t.tps)))
	}
	f.slow.lg.Warn("slow request", append([]zap.Field{zap.String("api", "Produce")},
		fields...)...)
}
