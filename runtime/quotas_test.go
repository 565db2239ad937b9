package runtime_test

import (
	"context"
	"crypto/rand"
	"errors"
	stdnet "net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap/zaptest"

	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/runtime"
)

const (
	quotaBytesPerSec = 100 << 10 // the throttled client's producer_byte_rate
	quotaRun         = 3 * time.Second
	quotaRecordBytes = 10 << 10
)

// startQuotaNode is a node whose quota windows are 2 × 1 s, so that a first burst is
// measured over one second (Kafka's default 11 windows let it be ten seconds' worth,
// longer than the test runs).
func startQuotaNode(t *testing.T) *runtime.Node {
	t.Helper()
	cfg := broker.DefaultConfig()
	require.NoError(t, cfg.Set("quota.window.num", "2"))
	n := runtime.NewNode(runtime.Options{ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(),
		Logger: zaptest.NewLogger(t), DrainTimeout: 2 * time.Second, Config: cfg})
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, n.Close()) })
	return n
}

// produceFor produces records of quotaRecordBytes from cl until d passed and returns
// the bytes acknowledged by then.
func produceFor(ctx context.Context, cl *kgo.Client, topic string, d time.Duration) int64 {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var acked atomic.Int64
	value := make([]byte, quotaRecordBytes)
	_, _ = rand.Read(value) // incompressible: quotas meter the bytes on the wire
	for ctx.Err() == nil {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, func(r *kgo.Record, err error) {
			if err == nil && ctx.Err() == nil {
				acked.Add(int64(len(r.Value)))
			}
		})
	}
	return acked.Load()
}

// TestClientQuotaHoldsOneProducerAndNotTheOther runs two franz-go producers side by
// side for a few seconds: the one whose client id has a 100 KiB/s producer quota stays
// near it, the other is not slowed.
func TestClientQuotaHoldsOneProducerAndNotTheOther(t *testing.T) {
	n := startQuotaNode(t)
	admin := newClient(t, n)
	createTopic(t, admin, "q", 1)
	adm := kadm.NewClient(admin)
	ctx := testCtx(t, 30*time.Second)
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: kmsg.StringPtr("slow")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: quotaBytesPerSec}},
	}})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	described, err := adm.DescribeClientQuotas(ctx, false, nil)
	require.NoError(t, err)
	require.Len(t, described, 1)

	opts := []kgo.Opt{kgo.ProducerLinger(time.Millisecond), kgo.RecordRetries(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordDeliveryTimeout(20 * time.Second)}
	// Batches of 16 KiB (the Java producer's batch.size): a request is admitted whole
	// and paid for afterwards, so over a few seconds one 1 MiB batch (kgo's default
	// while throttled) would be most of what the test measures.
	slow := newClient(t, n, append(opts, kgo.ClientID("slow"),
		kgo.ProducerBatchMaxBytes(16<<10))...)
	fast := newClient(t, n, append(opts, kgo.ClientID("fast"))...)
	var slowBytes, fastBytes int64
	done := make(chan struct{})
	go func() { defer close(done); slowBytes = produceFor(ctx, slow, "q", quotaRun) }()
	fastBytes = produceFor(ctx, fast, "q", quotaRun)
	<-done
	secs := quotaRun.Seconds()
	t.Logf("in %v: throttled client %.0f KiB/s (quota %d KiB/s), unthrottled %.0f KiB/s",
		quotaRun, float64(slowBytes)/secs/1024, quotaBytesPerSec>>10,
		float64(fastBytes)/secs/1024)
	require.Positive(t, slowBytes, "a throttled client still makes progress")
	require.Less(t, float64(slowBytes), 3*quotaBytesPerSec*secs,
		"the throttled client is held near its quota")
	require.Greater(t, float64(fastBytes), 5*quotaBytesPerSec*secs,
		"the other client is not slowed to the quota")
}

// TestClientQuotaHoldsAClientIgnoringThrottles pipelines Produce requests on a raw
// connection as fast as the node reads them, never waiting for ThrottleMillis: the
// node's mute still holds it near its quota.
func TestClientQuotaHoldsAClientIgnoringThrottles(t *testing.T) {
	n := startQuotaNode(t)
	admin := newClient(t, n)
	createTopic(t, admin, "q", 1)
	ctx := testCtx(t, 30*time.Second)
	res, err := kadm.NewClient(admin).AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: kmsg.StringPtr("raw")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: quotaBytesPerSec}},
	}})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)

	nc := rawConn(t, n) // client id "raw"
	deadline := time.Now().Add(quotaRun)
	require.NoError(t, nc.SetDeadline(deadline.Add(time.Second)))
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 8, 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "q"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch.Build([]batch.KV{{Value: make([]byte, quotaRecordBytes)}},
		batch.NoProducer, time.Now().UnixMilli())
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	writerDone := make(chan struct{})
	go func() { // writes requests back to back, whatever the answers say
		defer close(writerDone)
		for corr := int32(1); time.Now().Before(deadline); corr++ {
			if _, err := nc.Write(frame(corr, req)); err != nil {
				return
			}
		}
	}()
	var acked int64
	throttled := 0
	for time.Now().Before(deadline) {
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 8
		if !readResponseUntil(t, nc, resp) {
			break
		}
		if resp.ThrottleMillis > 0 {
			throttled++
		}
		if time.Now().Before(deadline) && resp.Topics[0].Partitions[0].ErrorCode == 0 {
			acked += int64(len(rp.Records))
		}
	}
	_ = nc.Close()
	<-writerDone
	secs := quotaRun.Seconds()
	t.Logf("client ignoring throttles: %.0f KiB/s (quota %d KiB/s), %d throttled answers",
		float64(acked)/secs/1024, quotaBytesPerSec>>10, throttled)
	require.Positive(t, throttled, "the answers told it to back off")
	require.Less(t, float64(acked), 3*quotaBytesPerSec*secs,
		"muting holds a client that ignores ThrottleMillis near its quota")
}

// readResponseUntil is readResponse that returns false at the connection's deadline.
func readResponseUntil(t *testing.T, nc stdnet.Conn, resp kmsg.Response) bool {
	t.Helper()
	var size [4]byte
	if _, err := readFull(nc, size[:]); err != nil {
		var ne stdnet.Error
		require.True(t, errors.As(err, &ne) && ne.Timeout(), "read: %v", err)
		return false
	}
	body := make([]byte, int(size[0])<<24|int(size[1])<<16|int(size[2])<<8|int(size[3]))
	if _, err := readFull(nc, body); err != nil {
		return false
	}
	require.NoError(t, resp.ReadFrom(body[4:]))
	return true
}

func readFull(nc stdnet.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := nc.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
