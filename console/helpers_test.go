package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap/zaptest"

	"github.com/sluicemq/sluice/runtime"
)

// fixture is a node with data: topic orders (3 partitions of 10 JSON records each),
// topic events (5 records with headers, one of them binary), group billing (no members,
// committed 4, 10 and 7 on orders: lag 6 + 0 + 3 = 9) and group audit (a live member
// consuming events).
type fixture struct {
	n    *runtime.Node
	base string // http://host:port of the console
	cl   *kgo.Client
	adm  *kadm.Client
	t0   time.Time // before the first record
}

const billingLag = 9

func startFixture(t *testing.T, admin bool) *fixture {
	t.Helper()
	n := runtime.NewNode(runtime.Options{ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(),
		Logger: zaptest.NewLogger(t), DrainTimeout: 2 * time.Second,
		HTTPListen: "127.0.0.1:0", ConsoleAdmin: admin})
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { _ = n.Close() })
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr()), kgo.DialTimeout(2*time.Second),
		kgo.RetryTimeout(10*time.Second), kgo.MetadataMinAge(50*time.Millisecond),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	f := &fixture{n: n, base: "http://" + n.HTTPAddr(), cl: cl, adm: kadm.NewClient(cl),
		t0: time.Now().Add(-time.Second)}
	ctx := ctxFor(t, 20*time.Second)
	for topic, parts := range map[string]int32{"orders": 3, "events": 1} {
		resp, err := f.adm.CreateTopic(ctx, parts, 1, nil, topic)
		require.NoError(t, err)
		require.NoError(t, resp.Err)
	}
	var recs []*kgo.Record
	for p := int32(0); p < 3; p++ {
		for i := 0; i < 10; i++ {
			recs = append(recs, &kgo.Record{Topic: "orders", Partition: p,
				Key:   []byte(fmt.Sprintf("order-%d-%d", p, i)),
				Value: []byte(fmt.Sprintf(`{"order":%d,"partition":%d,"amount":%d}`, i, p, 10*i))})
		}
	}
	for i := 0; i < 5; i++ {
		v := []byte(fmt.Sprintf("event number %d", i))
		if i == 4 {
			v = []byte{0x00, 0xff, 0x10, 0x80}
		}
		recs = append(recs, &kgo.Record{Topic: "events", Value: v,
			Headers: []kgo.RecordHeader{{Key: "source", Value: []byte("test")}}})
	}
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
	offs := kadm.Offsets{}
	for p, at := range []int64{4, 10, 7} {
		offs.Add(kadm.Offset{Topic: "orders", Partition: int32(p), At: at, LeaderEpoch: -1})
	}
	cr, err := f.adm.CommitOffsets(ctx, "billing", offs)
	require.NoError(t, err)
	require.NoError(t, cr.Error())
	f.startAudit(t)
	return f
}

// startAudit runs a group member of audit that consumes events and commits, until the
// test ends; it returns once the group has committed all five records.
func (f *fixture) startAudit(t *testing.T) {
	t.Helper()
	cons, err := kgo.NewClient(kgo.SeedBrokers(f.n.Addr()), kgo.ConsumerGroup("audit"),
		kgo.ConsumeTopics("events"), kgo.DialTimeout(2*time.Second),
		kgo.FetchMaxWait(200*time.Millisecond), kgo.AutoCommitInterval(200*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ClientID("audit-consumer"))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			_ = fs
		}
	}()
	t.Cleanup(func() { cancel(); <-done; cons.Close() })
	require.Eventually(t, func() bool {
		lags, err := f.adm.Lag(ctxFor(t, 2*time.Second), "audit")
		if err != nil {
			return false
		}
		l := lags["audit"]
		c, ok := l.Lag.Lookup("events", 0)
		return l.State == "Stable" && ok && c.Commit.At == 5
	}, 20*time.Second, 100*time.Millisecond)
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

var noRedirect = &http.Client{Timeout: 10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// get answers a GET of base+path: status and body.
func (f *fixture) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := noRedirect.Get(f.base + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// getJSON GETs path, requires 200 and decodes the answer into v.
func (f *fixture) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	code, body := f.get(t, path)
	require.Equal(t, http.StatusOK, code, "%s: %s", path, body)
	require.NoError(t, json.Unmarshal([]byte(body), v), body)
}

// post sends a JSON body with the given headers (Content-Type defaults to JSON).
func (f *fixture) post(t *testing.T, path, body string, hdr map[string]string) (int,
	string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.base+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := noRedirect.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// requireServesKafka produces a record and reads it back within a few seconds.
func (f *fixture) requireServesKafka(t *testing.T) {
	t.Helper()
	ctx := ctxFor(t, 10*time.Second)
	r := &kgo.Record{Topic: "events", Value: []byte("still serving")}
	require.NoError(t, f.cl.ProduceSync(ctx, r).FirstErr())
	ends, err := f.adm.ListEndOffsets(ctx, "events")
	require.NoError(t, err)
	o, _ := ends.Lookup("events", 0)
	require.Equal(t, r.Offset+1, o.Offset)
}
