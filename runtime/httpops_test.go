package runtime_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap/zaptest"

	"github.com/sluicemq/sluice/runtime"
)

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// scrape parses /metrics with Prometheus's own text parser.
func scrape(t *testing.T, n *runtime.Node) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := httpGet(t, "http://"+n.HTTPAddr()+"/metrics")
	require.Equal(t, http.StatusOK, code, body)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	return fams
}

// gaugeFor is the value of family's series whose labels include want.
func gaugeFor(t *testing.T, fams map[string]*dto.MetricFamily, family string,
	want map[string]string) float64 {
	t.Helper()
	f, ok := fams[family]
	require.True(t, ok, "no family %s", family)
	for _, m := range f.Metric {
		match := 0
		for _, l := range m.Label {
			if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
				match++
			}
		}
		if match == len(want) {
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no %s series with %v", family, want)
	return 0
}

// The operator endpoints: alive, ready once serving, and metrics that follow the
// partition's offsets as records are produced, in Prometheus's text format.
func TestHTTPEndpointsServeHealthAndMetrics(t *testing.T) {
	n := runtime.NewNode(runtime.Options{ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(),
		Logger: zaptest.NewLogger(t), DrainTimeout: 2 * time.Second,
		HTTPListen: "127.0.0.1:0"})
	require.NoError(t, n.Start(context.Background()))
	base := "http://" + n.HTTPAddr()
	code, body := httpGet(t, base+"/healthz")
	require.Equal(t, http.StatusOK, code, body)
	code, body = httpGet(t, base+"/readyz")
	require.Equal(t, http.StatusOK, code, body)

	cl := newClient(t, n, kgo.DefaultProduceTopic("m"))
	createTopic(t, cl, "m", 1)
	tp := map[string]string{"topic": "m", "partition": "0"}
	require.Zero(t, gaugeFor(t, scrape(t, n), "sluice_partition_high_watermark", tp))
	for _, v := range []string{"a", "b", "c"} {
		require.NoError(t, cl.ProduceSync(testCtx(t, 10*time.Second),
			&kgo.Record{Value: []byte(v)}).FirstErr())
	}
	fams := scrape(t, n)
	require.EqualValues(t, 3, gaugeFor(t, fams, "sluice_partition_high_watermark", tp))
	require.EqualValues(t, 3, gaugeFor(t, fams, "sluice_partition_log_end_offset", tp))
	require.EqualValues(t, 0, gaugeFor(t, fams, "sluice_partition_offline", tp))
	require.Positive(t, gaugeFor(t, fams, "sluice_connections_open", nil))
	require.Positive(t, fams["sluice_fsync_duration_seconds"].Metric[0].GetHistogram().
		GetSampleCount(), "acks=all produces fsynced")
	require.Contains(t, fams, "go_goroutines")
	require.Contains(t, fams, "sluice_connection_limit_hits_total")

	cl.Close()
	require.NoError(t, n.Close())
	_, err := (&http.Client{Timeout: 2 * time.Second}).Get(base + "/healthz")
	require.Error(t, err, "the listener closes with the node")
}

// Requests no operator sends get a 4xx, not a hang or a crash, and the node serves on.
func TestHTTPEndpointsRefuseWhatTheyDoNotServe(t *testing.T) {
	n := runtime.NewNode(runtime.Options{ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(),
		Logger: zaptest.NewLogger(t), DrainTimeout: 2 * time.Second,
		HTTPListen: "127.0.0.1:0"})
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, n.Close()) })
	base := "http://" + n.HTTPAddr()
	code, _ := httpGet(t, base+"/../../etc/passwd")
	require.Equal(t, http.StatusNotFound, code)
	resp, err := http.Post(base+"/metrics", "text/plain", strings.NewReader("x"))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)

	req, err := http.NewRequest(http.MethodGet, base+"/healthz", nil)
	require.NoError(t, err)
	req.Header.Set("X-Huge", strings.Repeat("a", 64<<10))
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)

	code, _ = httpGet(t, base+"/readyz")
	require.Equal(t, http.StatusOK, code, "still serving")
}
