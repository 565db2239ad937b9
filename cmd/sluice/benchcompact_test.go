package main

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/runtime"
)

// bench compaction against an in-process node: the clean's figure comes from the node's
// cleaner metrics (it rewrote about what was filled, down to one record per key), both
// producers are measured in both windows, and the topics go afterwards.
func TestBenchCompactionReportsTheCleanAndBothWindows(t *testing.T) {
	cfg := broker.DefaultConfig()
	require.NoError(t, cfg.Set("log.cleaner.backoff.ms", "100"))
	n := runtime.NewNode(runtime.Options{ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(),
		HTTPListen: "127.0.0.1:0", Config: cfg, Logger: zaptest.NewLogger(t)})
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, n.Close()) })
	o := compactOpts{bootstrap: n.Addr(), metrics: "http://" + n.HTTPAddr() + "/metrics",
		fillBytes: 4 << 20, keys: 50, size: 512, segmentBytes: 256 << 10, rate: 200,
		idle: 500 * time.Millisecond, maxTime: 60 * time.Second}
	var out strings.Builder
	require.NoError(t, benchCompaction(context.Background(), o, &out))
	got := out.String()
	t.Log(got)

	clean := regexp.MustCompile(`test=compaction_clean .*cleaned_MiB=([0-9.]+) .*` +
		`written_MiB=([0-9.]+) `).FindStringSubmatch(got)
	require.NotNil(t, clean, got)
	cleaned, _ := strconv.ParseFloat(clean[1], 64)
	written, _ := strconv.ParseFloat(clean[2], 64)
	require.Greater(t, cleaned, 3.0, "nearly all of the 4 MiB filled is in closed segments")
	require.Less(t, written, 0.1, "50 keys of 512 bytes are left, not megabytes")
	// The idle window has a second of records; a clean of 4 MiB may be over before
	// the busy window holds any, which its figure then says (ERROR ...).
	for _, p := range []string{"acks1", "acksall"} {
		require.Regexp(t, "test=produce_compaction_idle_"+p+" msgs_per_s=", got)
		require.Contains(t, got, "test=produce_compaction_busy_"+p+" ", got)
	}
	require.Empty(t, benchTopics(t, n.Addr()))
}
