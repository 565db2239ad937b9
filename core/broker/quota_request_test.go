package broker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metadataAs sends a Metadata request (all topics) as principal/client id on conn and
// returns its reply's ThrottleMillis and MuteMs.
func (h *harness) metadataAs(conn uint64, principal, clientID string) (int32, int64) {
	h.t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	id, ok := h.sendAs(conn, principal, clientID, req)
	require.True(h.t, ok, "a throttled request is still answered")
	r := h.env.replies[id]
	return r.Msg.(*kmsg.MetadataResponse).ThrottleMillis, r.MuteMs
}

// chargeAs reports d of handler time for a request of principal/client id, as the
// driver does after the step that handled it.
func (h *harness) chargeAs(principal, clientID string, d time.Duration) {
	h.t.Helper()
	h.step(HandlerTime{Request: Request{Conn: 99, ClientID: clientID, Principal: principal,
		Msg: kmsg.NewPtrMetadataRequest()}, Nanos: d.Nanoseconds()})
}

// TestRequestQuotaThrottlesOverItsShareOfHandlerTime: 1 % of a thread over Kafka's
// windows (11 × 1 s, a first burst measured over 10 s) is 100 ms of handler time;
// the answers after more than that carry ThrottleMillis and mute the connection.
func TestRequestQuotaThrottlesOverItsShareOfHandlerTime(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	h.mustSetQuota([]string{"client-id", "busy"}, "request_percentage", 1)

	tm, mute := h.metadataAs(1, "", "busy")
	require.Zero(t, tm, "nothing charged yet")
	require.Zero(t, mute)
	h.chargeAs("", "busy", 50*time.Millisecond)
	tm, mute = h.metadataAs(1, "", "busy")
	require.Zero(t, tm, "0.5 %% of a thread: under the bound")
	require.Zero(t, mute)

	// 105 ms over 10 s is 1.05 %: (1.05 - 1) / 1 × 10 s = 500 ms.
	h.chargeAs("", "busy", 55*time.Millisecond)
	tm, mute = h.metadataAs(1, "", "busy")
	require.Equal(t, int32(500), tm)
	require.Equal(t, int64(500), mute, "the reply mutes the connection as long")
	// A Produce read ahead on that connection waits out the throttle, then is served.
	held, ok := h.sendAs(1, "", "busy", produceReq(-1, "t", 0, values("x")))
	require.False(t, ok, "held while the connection's throttle runs")
	h.advance(499 * time.Millisecond)
	_, ok = h.reply(held)
	require.False(t, ok)
	h.advance(time.Millisecond)
	_, ok = h.reply(held)
	require.True(t, ok, "served once the throttle ended")

	// A client id without a quota is never throttled, however long it takes.
	h.chargeAs("", "idle", time.Hour)
	tm, mute = h.metadataAs(2, "", "idle")
	require.Zero(t, tm)
	require.Zero(t, mute)

	// Far over: the throttle is capped at one window (Kafka's cap for request quotas).
	h.chargeAs("", "busy", 10*time.Second)
	tm, mute = h.metadataAs(3, "", "busy")
	require.Equal(t, int32(1000), tm)
	require.Equal(t, int64(1000), mute)

	// Once the client kept away for the whole span, it is under its quota again.
	h.advance(12 * time.Second)
	tm, _ = h.metadataAs(1, "", "busy")
	require.Zero(t, tm)
}

// TestRequestQuotaMostSpecificEntityWins: a user's quota overrides the client id's
// (user=U comes before client-id=C in Kafka's order); other users with that client id
// share the client id's meter.
func TestRequestQuotaMostSpecificEntityWins(t *testing.T) {
	h := newHarness(t)
	h.mustSetQuota([]string{"client-id", "app"}, "request_percentage", 1)
	h.mustSetQuota([]string{"user", "alice"}, "request_percentage", 1000)

	h.chargeAs("User:alice", "app", 2*time.Second) // 2 % of 10 s: over 1, under 1000
	tm, mute := h.metadataAs(1, "User:alice", "app")
	require.Zero(t, tm, "alice's own quota applies, not the client id's")
	require.Zero(t, mute)
	bt, bm := h.metadataAs(2, "User:bob", "app")
	require.Zero(t, bt, "alice's time is on her meter, not on the client id's")
	require.Zero(t, bm)

	h.chargeAs("User:bob", "app", 150*time.Millisecond)
	h.chargeAs("User:carol", "app", 150*time.Millisecond) // the client id's meter: 3 %
	bt, bm = h.metadataAs(2, "User:bob", "app")
	require.Equal(t, int32(1000), bt, "(0.03 - 0.01) / 0.01 × 10 s, capped at one window")
	require.Equal(t, int64(1000), bm)
	tm, _ = h.metadataAs(1, "User:alice", "app")
	require.Zero(t, tm, "alice is still under hers")

	// Requests a follower or another broker sends are never metered.
	f := fetchReq("t", 0, 0, 0, 1)
	f.ReplicaID = 2
	require.True(t, exemptFromRequestQuota(Request{Msg: f}))
	require.True(t, exemptFromRequestQuota(Request{Msg: kmsg.NewPtrAlterPartitionRequest()}))
	require.False(t, exemptFromRequestQuota(Request{Msg: fetchReq("t", 0, 0, 0, 1)}))
}

// TestRequestQuotaAndByteRateTheLongerWins: a Produce over both quotas carries the
// longer throttle, and mutes as long.
func TestRequestQuotaAndByteRateTheLongerWins(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	h.mustSetQuota([]string{"client-id", "w"}, "producer_byte_rate", 1)
	h.mustSetQuota([]string{"client-id", "w"}, "request_percentage", 1)
	h.chargeAs("", "w", 105*time.Millisecond) // request quota: 500 ms
	id, ok := h.sendAs(1, "", "w", produceReq(-1, "t", 0, values("small")))
	require.True(t, ok)
	r := h.env.replies[id]
	tm := r.Msg.(*kmsg.ProduceResponse).ThrottleMillis
	require.Greater(t, tm, int32(500), "the byte rate's throttle is longer here")
	require.Equal(t, int64(tm), r.MuteMs)

	h2 := newHarness(t)
	h2.mustCreate("t", 1)
	h2.mustSetQuota([]string{"client-id", "w"}, "producer_byte_rate", 1e6)
	h2.mustSetQuota([]string{"client-id", "w"}, "request_percentage", 1)
	h2.chargeAs("", "w", 105*time.Millisecond)
	id, _ = h2.sendAs(1, "", "w", produceReq(1, "t", 0, values("small")))
	r = h2.env.replies[id]
	require.Equal(t, int32(500), r.Msg.(*kmsg.ProduceResponse).ThrottleMillis,
		"under its byte rate: the request quota's throttle")
	require.Equal(t, int64(500), r.MuteMs)
}
