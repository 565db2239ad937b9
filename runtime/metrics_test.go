package runtime_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap/zaptest"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/runtime"
)

// startMetricsNode runs a node with its HTTP listener and no initial rebalance delay.
func startMetricsNode(t *testing.T) *runtime.Node {
	t.Helper()
	cfg := broker.DefaultConfig()
	require.NoError(t, cfg.Set("group.initial.rebalance.delay.ms", "0"))
	n := runtime.NewNode(runtime.Options{ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(),
		Logger: zaptest.NewLogger(t), DrainTimeout: 2 * time.Second,
		HTTPListen: "127.0.0.1:0", Config: cfg})
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, n.Close()) })
	return n
}

// sumFor adds the values (counter, gauge or histogram count) of family's series whose
// labels include want; found is false when there is none.
func sumFor(fams map[string]*dto.MetricFamily, family string,
	want map[string]string) (sum float64, found bool) {
	f, ok := fams[family]
	if !ok {
		return 0, false
	}
	for _, m := range f.Metric {
		match := 0
		for _, l := range m.Label {
			if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
				match++
			}
		}
		if match != len(want) {
			continue
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum, found
}

// histogramSum is the sum of observations of family's series for api.
func histogramSum(fams map[string]*dto.MetricFamily, family, api string) float64 {
	for _, m := range fams[family].Metric {
		for _, l := range m.Label {
			if l.GetName() == "api" && l.GetValue() == api {
				return m.GetHistogram().GetSampleSum()
			}
		}
	}
	return 0
}

func requireSum(t *testing.T, fams map[string]*dto.MetricFamily, family string,
	want map[string]string) float64 {
	t.Helper()
	v, ok := sumFor(fams, family, want)
	require.True(t, ok, "no %s series with %v", family, want)
	return v
}

func produceN(t *testing.T, cl *kgo.Client, topic string, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		r := &kgo.Record{Topic: topic, Value: []byte("value-" + strconv.Itoa(i))}
		require.NoError(t, cl.ProduceSync(testCtx(t, 10*time.Second), r).FirstErr())
	}
}

// consumeAndCommit reads want records with group, commits them, and leaves the group.
func consumeAndCommit(t *testing.T, n *runtime.Node, group, topic string, want int) {
	t.Helper()
	cl := newClient(t, n, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := testCtx(t, 20*time.Second)
	got := 0
	for got < want {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "consumed %d of %d", got, want)
		got += fs.NumRecords()
	}
	require.Equal(t, want, got)
	require.NoError(t, cl.CommitUncommittedOffsets(ctx))
	cl.Close()
}

// /metrics under a small produce and consume load: every series moves as the load
// says it should, and the text parses with Prometheus's parser (scrape).
func TestMetricsFollowProduceAndConsume(t *testing.T) {
	n := startMetricsNode(t)
	cl := newClient(t, n)
	createTopic(t, cl, "m", 1)
	tp := map[string]string{"topic": "m", "partition": "0"}
	gtp := map[string]string{"group": "g", "topic": "m", "partition": "0"}
	topic := map[string]string{"topic": "m"}

	produceN(t, cl, "m", 0, 10)
	consumeAndCommit(t, n, "g", "m", 10)
	fams := scrape(t, n)
	require.EqualValues(t, 10, requireSum(t, fams, "sluice_group_committed_offset", gtp))
	require.EqualValues(t, 0, requireSum(t, fams, "sluice_group_lag", gtp))
	require.EqualValues(t, 10, requireSum(t, fams, "sluice_topic_records_in_total", topic))
	bytesIn := requireSum(t, fams, "sluice_topic_bytes_in_total", topic)
	require.Positive(t, bytesIn)
	require.GreaterOrEqual(t, requireSum(t, fams, "sluice_topic_records_out_total", topic),
		10.0)
	require.Positive(t, requireSum(t, fams, "sluice_topic_bytes_out_total", topic))
	require.Positive(t, requireSum(t, fams, "sluice_partition_size_bytes", tp))
	require.EqualValues(t, 10, requireSum(t, fams, "sluice_partition_last_stable_offset", tp))
	require.EqualValues(t, 0, requireSum(t, fams, "sluice_partition_under_replicated", tp))
	require.EqualValues(t, 1, requireSum(t, fams, "sluice_partition_leader", tp))
	require.Positive(t, requireSum(t, fams, "sluice_metadata_applied_index", nil))

	// The group is stopped: its lag grows with what is produced meanwhile.
	produceN(t, cl, "m", 10, 5)
	fams = scrape(t, n)
	require.EqualValues(t, 5, requireSum(t, fams, "sluice_group_lag", gtp))
	require.EqualValues(t, 10, requireSum(t, fams, "sluice_group_committed_offset", gtp))
	require.EqualValues(t, 15, requireSum(t, fams, "sluice_topic_records_in_total", topic))
	require.Greater(t, requireSum(t, fams, "sluice_topic_bytes_in_total", topic), bytesIn)

	// It catches up: the lag falls back to 0.
	consumeAndCommit(t, n, "g", "m", 5)
	fams = scrape(t, n)
	require.EqualValues(t, 0, requireSum(t, fams, "sluice_group_lag", gtp))
	require.EqualValues(t, 15, requireSum(t, fams, "sluice_group_committed_offset", gtp))
	require.GreaterOrEqual(t, requireSum(t, fams, "sluice_topic_records_out_total", topic),
		15.0)

	// Every acks=all produce went through the four stages, each timed once.
	produces := requireSum(t, fams, "sluice_requests_total",
		map[string]string{"api": "Produce", "error": "NONE"})
	require.GreaterOrEqual(t, produces, 15.0)
	for _, stage := range []string{"queue", "append", "fsync", "replication"} {
		require.Equal(t, produces, requireSum(t, fams, "sluice_produce_stage_seconds",
			map[string]string{"stage": stage}), stage)
	}
	require.Equal(t, produces, requireSum(t, fams, "sluice_request_duration_seconds",
		map[string]string{"api": "Produce"}))
	// The stages split each request's time: together they lie within it (the request
	// is timed from its decoding to its answer, a little wider) and make most of it.
	var stages float64
	for _, m := range fams["sluice_produce_stage_seconds"].Metric {
		stages += m.GetHistogram().GetSampleSum()
	}
	total := histogramSum(fams, "sluice_request_duration_seconds", "Produce")
	require.LessOrEqual(t, stages, total)
	require.Greater(t, stages, total/2)
	require.Positive(t, requireSum(t, fams, "sluice_request_duration_seconds",
		map[string]string{"api": "Fetch"}))
	// Each fsync covers what was appended since the previous one: the 15 records of
	// m and the group's offset commits, every one of them once.
	require.GreaterOrEqual(t, fams["sluice_fsync_batch_records"].Metric[0].GetHistogram().
		GetSampleSum(), 15.0)
	require.Positive(t, requireSum(t, fams, "sluice_fsync_batch_bytes", nil))
	// The two group consumers' connections close (the node sees it a little after the
	// client closed them); the producer's stay open.
	require.Eventually(t, func() bool {
		fams := scrape(t, n)
		opened := requireSum(t, fams, "sluice_connections_opened_total", nil)
		closed := requireSum(t, fams, "sluice_connections_closed_total", nil)
		open := requireSum(t, fams, "sluice_connections_open", nil)
		return closed >= 2 && open >= 1 && opened-closed == open
	}, 10*time.Second, 20*time.Millisecond)
}

// A request for a topic that does not exist is counted under its API with the error
// code the node answered, once per request.
func TestMetricsCountRequestsByError(t *testing.T) {
	n := startMetricsNode(t)
	cl := newClient(t, n)
	unknown := map[string]string{"api": "Metadata", "error": "UNKNOWN_TOPIC_OR_PARTITION"}
	before, _ := sumFor(scrape(t, n), "sluice_requests_total", unknown)

	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("does-not-exist")
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = false
	for range 3 {
		resp, err := req.RequestWith(testCtx(t, 10*time.Second), cl)
		require.NoError(t, err)
		require.Equal(t, int16(3), resp.Topics[0].ErrorCode) // UNKNOWN_TOPIC_OR_PARTITION
	}
	fams := scrape(t, n)
	require.Equal(t, before+3, requireSum(t, fams, "sluice_requests_total", unknown))
	// franz-go asks ApiVersions at a version above the node's and takes the key list of
	// the UNSUPPORTED_VERSION answer, as Kafka's protocol allows.
	require.Positive(t, requireSum(t, fams, "sluice_requests_total",
		map[string]string{"api": "ApiVersions", "error": "UNSUPPORTED_VERSION"}),
		"answers the server makes itself are counted too")
	// The version label is the request's.
	f := fams["sluice_requests_total"]
	for _, m := range f.Metric {
		for _, l := range m.Label {
			if l.GetName() == "version" {
				_, err := strconv.Atoi(l.GetValue())
				require.NoError(t, err)
			}
		}
	}
}
