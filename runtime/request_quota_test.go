package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestLoad is what one client saw sending Metadata requests back to back.
type requestLoad struct {
	answered, throttled int
	maxThrottleMs       int32
}

// metadataFor sends Metadata requests for topic from cl until d passed. franz-go waits
// out each ThrottleMillis before its next request to the node, as Kafka's clients do.
func metadataFor(ctx context.Context, cl *kgo.Client, topic string,
	d time.Duration) requestLoad {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var l requestLoad
	for ctx.Err() == nil {
		req := kmsg.NewPtrMetadataRequest()
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, t)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			continue
		}
		l.answered++
		if resp.ThrottleMillis > 0 {
			l.throttled++
			l.maxThrottleMs = max(l.maxThrottleMs, resp.ThrottleMillis)
		}
	}
	return l
}

// TestRequestQuotaThrottlesOneClientAndNotTheOther: two clients send Metadata
// requests side by side; the one whose client id may take 0.01 % of a handler thread
// (0.1 ms of handler time a second) gets ThrottleMillis, capped at one window, and is
// slowed to a few requests a second; the one without a quota is never throttled.
func TestRequestQuotaThrottlesOneClientAndNotTheOther(t *testing.T) {
	n := startQuotaNode(t) // windows 2 × 1 s
	admin := newClient(t, n)
	createTopic(t, admin, "q", 1)
	ctx := testCtx(t, 30*time.Second)
	res, err := kadm.NewClient(admin).AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: kmsg.StringPtr("greedy")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "request_percentage", Value: 0.01}},
	}})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)

	greedy := newClient(t, n, kgo.ClientID("greedy"))
	polite := newClient(t, n, kgo.ClientID("polite"))
	const run = 2 * time.Second
	var g requestLoad
	done := make(chan struct{})
	go func() { defer close(done); g = metadataFor(ctx, greedy, "q", run) }()
	p := metadataFor(ctx, polite, "q", run)
	<-done
	t.Logf("in %v: greedy %d answers, %d throttled (max %d ms); polite %d answers, "+
		"%d throttled", run, g.answered, g.throttled, g.maxThrottleMs, p.answered,
		p.throttled)
	require.Positive(t, g.answered, "a throttled client is still served")
	require.Positive(t, g.throttled, "the client over its request quota is throttled")
	require.LessOrEqual(t, g.maxThrottleMs, int32(1000), "at most one window")
	require.Zero(t, p.throttled, "the client without a quota is never throttled")
	require.Greater(t, p.answered, 5*g.answered, "and is not slowed with the other")
}
