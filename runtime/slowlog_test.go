package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sluicemq/sluice/runtime"
)

// slowLines starts a node logging every request slower than threshold, runs fn against
// it, and returns the slow-request lines by API.
func slowLines(t *testing.T, http string, threshold time.Duration,
	fn func(cl *kgo.Client)) map[string][]observer.LoggedEntry {
	t.Helper()
	core, logs := observer.New(zapcore.WarnLevel)
	n := runtime.NewNode(runtime.Options{ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(),
		Logger: zap.New(core), DrainTimeout: 2 * time.Second, HTTPListen: http,
		SlowRequest: threshold})
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, n.Close()) })
	cl := newClient(t, n, kgo.DefaultProduceTopic("slow"), kgo.AllowAutoTopicCreation(),
		kgo.ConsumeTopics("slow"), kgo.FetchMaxWait(50*time.Millisecond))
	fn(cl)
	cl.Close()
	out := map[string][]observer.LoggedEntry{}
	for _, e := range logs.FilterMessage("slow request").All() {
		api, _ := e.ContextMap()["api"].(string)
		out[api] = append(out[api], e)
	}
	return out
}

func produceAndFetch(t *testing.T) func(cl *kgo.Client) {
	return func(cl *kgo.Client) {
		require.NoError(t, cl.ProduceSync(testCtx(t, 10*time.Second),
			&kgo.Record{Value: []byte("v")}).FirstErr())
		fs := cl.PollFetches(testCtx(t, 10*time.Second))
		require.NoError(t, fs.Err0())
	}
}

// With a threshold below every request's time, each request is logged, a Produce with
// its stages, but not a Fetch (a long poll waits by design). A threshold no request
// reaches logs nothing.
func TestSlowRequestsAreLoggedWithTheirStages(t *testing.T) {
	lines := slowLines(t, "127.0.0.1:0", time.Nanosecond, produceAndFetch(t))
	require.NotEmpty(t, lines["Metadata"])
	require.NotEmpty(t, lines["Produce"])
	require.Empty(t, lines["Fetch"], "a long poll is not slow")
	p := lines["Produce"][len(lines["Produce"])-1].ContextMap()
	for _, f := range []string{"elapsed_ms", "queue_ms", "append_ms", "fsync_ms",
		"replication_ms"} {
		require.Contains(t, p, f, "an acks=all produce's stages")
	}

	// Without the HTTP listener there are no stages, but the line is still there.
	lines = slowLines(t, "", time.Nanosecond, produceAndFetch(t))
	require.NotEmpty(t, lines["Produce"])
	require.Contains(t, lines["Produce"][0].ContextMap(), "error")

	require.Empty(t, slowLines(t, "127.0.0.1:0", time.Hour, produceAndFetch(t)))
}
