package sim

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
)

// TestRotIsDetectedAndSurvived runs seeds with frequent bit rot, stale writes and
// crashes. Rot must fire, be detected by reads (KAFKA_STORAGE_ERROR, an operator
// restart), and every seed must pass: no rotten byte reaches a client, and the data it
// took is accounted for only by the rot the world reported.
func TestRotIsDetectedAndSurvived(t *testing.T) {
	sets := [][2]string{{"faults", "off"}, {"faults.rot", "on"}, {"faults.rot.every.ms", "300"},
		{"faults.stalewrites", "on"}, {"faults.crash", "on"}, {"producer.idempotent", "true"}}
	seeds := seedRange(1, 12)
	if testing.Short() {
		seeds = seedRange(1, 4)
	}
	stats := map[string]int{}
	codes := map[string]int{}
	for _, r := range runParallel(t, seeds, sets) {
		require.True(t, r.Result.Pass, "%s\n  %s\n  reproduce: %s", r.Result.Line(),
			strings.Join(r.Result.Summary(), "\n  "), reproduce(r, sets))
		for _, k := range []string{"rot", "rot-detected", "rot-restart", "stale-write"} {
			stats[k] += r.Result.Stats.Faults[k]
		}
		for k, v := range r.Result.Stats.Codes {
			codes[k] += v
		}
	}
	t.Logf("%v", stats)
	require.Positive(t, stats["rot"])
	require.Positive(t, stats["rot-detected"], "no read ever found the rot")
	require.Positive(t, stats["rot-restart"])
	require.Positive(t, stats["stale-write"])
	require.Positive(t, codes["fetch:"+errName(kerr.KafkaStorageError.Code)], codes)
}

// The readers check every fetched batch's CRC with their own code, not the broker's
// batch.Check (which the batch/crc-unchecked mutant breaks).
func TestReadersRefuseACorruptBatch(t *testing.T) {
	w, err := New(quietConfig(3), Options{})
	require.NoError(t, err)
	b := batch.Build([]batch.KV{{Key: []byte("k"), Value: []byte("v")}}, batch.NoProducer, 1)
	_, err = w.decodeBatches(tp0(), b)
	require.NoError(t, err)
	b[len(b)-1] ^= 0x20
	_, err = w.decodeBatches(tp0(), b)
	require.ErrorIs(t, err, errCorruptServed)
}

func TestRotPicksABatchWithASyncedFollower(t *testing.T) {
	var seg []byte
	next := int64(0)
	for i := 0; i < 3; i++ {
		b := batch.Build([]batch.KV{{Value: []byte("v")}}, batch.NoProducer, 1)
		batch.SetBaseOffset(b, next)
		next++
		seg = append(seg, b...)
	}
	c := appendRotCandidates(nil, "/data/t-0/00000000000000000000.log", tp0(), seg[:len(seg)-3])
	require.Len(t, c, 1, "the last whole batch has no follower; the torn one is no batch")
	require.Equal(t, int64(1), c[0].next)
	tp, ok := segmentTP("/data/my-topic-12/00000000000000000007.log")
	require.True(t, ok)
	require.Equal(t, "my-topic", tp.Topic)
	require.Equal(t, int32(12), tp.Partition)
}

// TestEventLoopIOKeepsTheNodeBusy restarts a node, whose Start step recovers every log
// from the disk: with I/O latency on, a request arriving meanwhile waits for it.
func TestEventLoopIOKeepsTheNodeBusy(t *testing.T) {
	for _, on := range []bool{false, true} {
		cfg := quietConfig(7)
		cfg.Timing.IOFloorUs, cfg.Timing.IOMeanUs = 0, 0
		if on {
			cfg.Timing.IOFloorUs, cfg.Timing.IOMeanUs = 50_000, 1
		}
		w, err := New(cfg, Options{})
		require.NoError(t, err)
		w.nodes[0].boot()
		w.clients[0].start()
		w.runUntil(3000 * ms)
		n := w.nodes[0]
		n.stop("test")
		w.runUntil(w.now + 100*ms) // the client learns its connection is gone
		n.restart()
		start := w.now
		at, _, err := metadataRoundTrip(t, w, w.now+60_000*ms)
		require.NoError(t, err)
		if on {
			require.GreaterOrEqual(t, at-start, 50*ms, "the reply waited for the recovery's I/O")
		} else {
			require.Less(t, at-start, 50*ms)
		}
	}
}

func tp0() core.TopicPartition { return core.TopicPartition{Topic: "t0", Partition: 0} }
