package broker

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/meta"
)

// quotaSet is one AlterClientQuotas op.
type quotaSet struct {
	key    string
	value  float64
	remove bool
}

// quotaEntry builds an AlterClientQuotas entry: parts alternate type and name, a name
// "<default>" meaning the default (null).
func quotaEntry(parts []string, ops ...quotaSet) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	for i := 0; i+1 < len(parts); i += 2 {
		we := kmsg.NewAlterClientQuotasRequestEntryEntity()
		we.Type = parts[i]
		if parts[i+1] != "<default>" {
			we.Name = kmsg.StringPtr(parts[i+1])
		}
		e.Entity = append(e.Entity, we)
	}
	for _, o := range ops {
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Value, op.Remove = o.key, o.value, o.remove
		e.Ops = append(e.Ops, op)
	}
	return e
}

func (h *harness) alterQuotas(validateOnly bool,
	entries ...kmsg.AlterClientQuotasRequestEntry) *kmsg.AlterClientQuotasResponse {
	h.t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Version, req.Entries, req.ValidateOnly = 1, entries, validateOnly
	return h.do(req).(*kmsg.AlterClientQuotasResponse)
}

func (h *harness) mustSetQuota(parts []string, key string, value float64) {
	h.t.Helper()
	resp := h.alterQuotas(false, quotaEntry(parts, quotaSet{key: key, value: value}))
	require.Len(h.t, resp.Entries, 1)
	require.Zero(h.t, resp.Entries[0].ErrorCode, "%v", resp.Entries[0].ErrorMessage)
}

// describeQuotas describes with components (type, match type, match) and returns the
// entries as "user=a,client-id=<default>: key=value ..." lines.
func (h *harness) describeQuotas(strict bool,
	comps ...kmsg.DescribeClientQuotasRequestComponent) []string {
	h.t.Helper()
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.Version, req.Strict, req.Components = 1, strict, comps
	resp := h.do(req).(*kmsg.DescribeClientQuotasResponse)
	require.Zero(h.t, resp.ErrorCode, "%v", resp.ErrorMessage)
	var out []string
	for _, e := range resp.Entries {
		var parts, vals []string
		for _, p := range e.Entity {
			name := "<default>"
			if p.Name != nil {
				name = *p.Name
			}
			parts = append(parts, p.Type+"="+name)
		}
		for _, v := range e.Values {
			vals = append(vals, v.Key+"="+formatFloat(v.Value))
		}
		out = append(out, strings.Join(parts, ",")+": "+strings.Join(vals, " "))
	}
	return out
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func comp(typ string, mt kmsg.QuotasMatchType, match *string) kmsg.DescribeClientQuotasRequestComponent {
	c := kmsg.NewDescribeClientQuotasRequestComponent()
	c.EntityType, c.MatchType, c.Match = typ, mt, match
	return c
}

func TestAlterAndDescribeClientQuotas(t *testing.T) {
	h := newHarness(t)
	resp := h.alterQuotas(false,
		quotaEntry([]string{"user", "alice"}, quotaSet{key: "producer_byte_rate", value: 1024},
			quotaSet{key: "consumer_byte_rate", value: 4096}),
		quotaEntry([]string{"client-id", "<default>"},
			quotaSet{key: "consumer_byte_rate", value: 2048}),
		quotaEntry([]string{"user", "alice", "client-id", "app"},
			quotaSet{key: "request_percentage", value: 12.5}),
		quotaEntry([]string{"user", "<default>"}, quotaSet{key: "producer_byte_rate", value: 10}))
	require.Len(t, resp.Entries, 4)
	for _, e := range resp.Entries {
		require.Zero(t, e.ErrorCode, "%v", e.ErrorMessage)
	}
	require.Equal(t, "client-id", resp.Entries[1].Entity[0].Type)
	require.Nil(t, resp.Entries[1].Entity[0].Name, "the default is echoed as null")

	all := []string{
		"user=<default>: producer_byte_rate=10",
		"user=alice: consumer_byte_rate=4096 producer_byte_rate=1024",
		"user=alice,client-id=app: request_percentage=12.5",
		"client-id=<default>: consumer_byte_rate=2048",
	}
	require.Equal(t, all, h.describeQuotas(false))
	alice := kmsg.StringPtr("alice")
	require.Equal(t, all[1:3], h.describeQuotas(false, comp("user", 0, alice)))
	require.Equal(t, all[1:2], h.describeQuotas(true, comp("user", 0, alice)),
		"strict: only entities of exactly the filter's types")
	require.Equal(t, all[0:1], h.describeQuotas(false, comp("user", 1, nil)))
	require.Equal(t, all[3:4], h.describeQuotas(true, comp("client-id", 2, nil)))
	require.Equal(t, all[2:3], h.describeQuotas(false, comp("user", 2, nil),
		comp("client-id", 2, nil)))
	require.Empty(t, h.describeQuotas(false, comp("ip", 2, nil)))

	// Removing and ValidateOnly.
	resp = h.alterQuotas(true, quotaEntry([]string{"user", "alice"},
		quotaSet{key: "producer_byte_rate", remove: true}))
	require.Zero(t, resp.Entries[0].ErrorCode)
	require.Equal(t, all, h.describeQuotas(false), "validateOnly changes nothing")
	h.alterQuotas(false, quotaEntry([]string{"user", "alice"},
		quotaSet{key: "producer_byte_rate", remove: true},
		quotaSet{key: "consumer_byte_rate", remove: true}))
	h.alterQuotas(false, quotaEntry([]string{"user", "alice", "client-id", "app"},
		quotaSet{key: "request_percentage", remove: true}))
	want := []string{all[0], all[3]}
	require.Equal(t, want, h.describeQuotas(false), "an entity without values is gone")

	// The quotas are in the replicated metadata: a restarted node has them.
	h.restart()
	require.Equal(t, want, h.describeQuotas(false))
}

func TestAlterClientQuotasValidates(t *testing.T) {
	h := newHarness(t)
	set := func(k string, v float64) quotaSet { return quotaSet{key: k, value: v} }
	cases := []struct {
		entry kmsg.AlterClientQuotasRequestEntry
		msg   string
	}{
		{quotaEntry([]string{"user", "a"}, set("producer_byte_rat", 1)),
			"Invalid configuration key producer_byte_rat"},
		{quotaEntry([]string{"user", "a"}, set("producer_byte_rate", -1)), "must not be negative"},
		{quotaEntry([]string{"user", "a"}, set("consumer_byte_rate", 1.5)), "must be a Long"},
		{quotaEntry([]string{"user", "a"}, set("producer_byte_rate", 1),
			set("producer_byte_rate", 2)), "Duplicate quota key"},
		{quotaEntry(nil, set("producer_byte_rate", 1)), "Invalid empty client quota entity"},
		{quotaEntry([]string{"user", "a", "user", "b"}, set("producer_byte_rate", 1)),
			"duplicate entity entry user"},
		{quotaEntry([]string{"group", "g"}, set("producer_byte_rate", 1)),
			"Unhandled client quota entity type: group"},
		{quotaEntry([]string{"ip", "1.2.3.4"}, set("producer_byte_rate", 1)), "ip quotas"},
		{quotaEntry([]string{"client-id", ""}, set("producer_byte_rate", 1)),
			"Empty client-id not supported"},
		{quotaEntry([]string{"user", "a"}, set("request_percentage", 5),
			set("producer_byte_rate", -5)), "must not be negative"},
	}
	for _, c := range cases {
		resp := h.alterQuotas(false, c.entry)
		require.Len(t, resp.Entries, 1)
		require.Equal(t, kerr.InvalidRequest.Code, resp.Entries[0].ErrorCode, c.msg)
		require.Contains(t, *resp.Entries[0].ErrorMessage, c.msg)
	}
	require.Empty(t, h.describeQuotas(false), "a refused entry changes nothing")

	// The same entity twice: both refused; another entity in the request still applies.
	resp := h.alterQuotas(false,
		quotaEntry([]string{"user", "a"}, set("producer_byte_rate", 1)),
		quotaEntry([]string{"user", "b"}, set("producer_byte_rate", 2)),
		quotaEntry([]string{"user", "a"}, set("consumer_byte_rate", 1)))
	require.Equal(t, kerr.InvalidRequest.Code, resp.Entries[0].ErrorCode)
	require.Zero(t, resp.Entries[1].ErrorCode)
	require.Equal(t, kerr.InvalidRequest.Code, resp.Entries[2].ErrorCode)
	require.Equal(t, []string{"user=b: producer_byte_rate=2"}, h.describeQuotas(false))

	// Malformed describe filters.
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.Components = []kmsg.DescribeClientQuotasRequestComponent{comp("user", 0, nil)}
	dr := h.do(req).(*kmsg.DescribeClientQuotasResponse)
	require.Equal(t, kerr.InvalidRequest.Code, dr.ErrorCode)
	req.Components = []kmsg.DescribeClientQuotasRequestComponent{comp("topic", 2, nil)}
	dr = h.do(req).(*kmsg.DescribeClientQuotasResponse)
	require.Equal(t, kerr.UnsupportedVersion.Code, dr.ErrorCode)
}

// TestQuotaResolutionMostSpecificWins sets quotas at every level and checks which one
// a (user, client id) pair gets, and which sensor (shared or not) meters it.
func TestQuotaResolutionMostSpecificWins(t *testing.T) {
	im := meta.NewImage()
	set := func(e meta.QuotaEntity, v float64) {
		require.NoError(t, im.Apply(meta.Record{Kind: meta.KindClientQuotaAltered,
			QuotaEntity: e, QuotaOps: []meta.QuotaOp{{Key: keyProducerByteRate, Value: v}}}))
	}
	u, d := meta.Named, meta.DefaultName()
	_, _, ok := resolveQuota(im, quotaProduce, "alice", "app")
	require.False(t, ok, "no quota: nothing metered")
	levels := []meta.QuotaEntity{
		{ClientID: d}, {ClientID: u("app")}, {User: d}, {User: d, ClientID: d},
		{User: d, ClientID: u("app")}, {User: u("alice")}, {User: u("alice"), ClientID: d},
		{User: u("alice"), ClientID: u("app")},
	}
	want := []sensorKey{
		{client: "app", hasCli: true}, {client: "app", hasCli: true},
		{user: "alice", hasUser: true}, {user: "alice", client: "app", hasUser: true,
			hasCli: true},
		{user: "alice", client: "app", hasUser: true, hasCli: true},
		{user: "alice", hasUser: true},
		{user: "alice", client: "app", hasUser: true, hasCli: true},
		{user: "alice", client: "app", hasUser: true, hasCli: true},
	}
	// Adding levels from the least to the most specific: each new one wins.
	for i, e := range levels {
		set(e, float64(i+1))
		bound, k, ok := resolveQuota(im, quotaProduce, "alice", "app")
		require.True(t, ok)
		require.Equal(t, float64(i+1), bound, "level %d (%s) wins", i, e)
		require.Equal(t, want[i], k, "level %d (%s)", i, e)
	}
	// Another user's client falls back to the defaults; another client of alice's to
	// alice's <default> client quota.
	bound, _, _ := resolveQuota(im, quotaProduce, "bob", "app")
	require.Equal(t, 5.0, bound, "user=<default>,client-id=app")
	bound, _, _ = resolveQuota(im, quotaProduce, "bob", "other")
	require.Equal(t, 4.0, bound, "user=<default>,client-id=<default>")
	bound, _, _ = resolveQuota(im, quotaProduce, "alice", "other")
	require.Equal(t, 7.0, bound, "user=alice,client-id=<default>")
	_, _, ok = resolveQuota(im, quotaFetch, "alice", "app")
	require.False(t, ok, "quotas are per key")
	require.Equal(t, "alice", quotaUser("User:alice"))
	require.Equal(t, "ANONYMOUS", quotaUser(""))
}

// TestQuotaRateIsMeasuredOverKafkasWindows drives one sensor on a manual clock.
func TestQuotaRateIsMeasuredOverKafkasWindows(t *testing.T) {
	cfg := DefaultQuotaConfig() // 11 windows of 1 s
	var s sensor
	s.record(cfg, 0, 10_000)
	// A first burst is measured over num-1 = 10 windows, not over its millisecond.
	require.InDelta(t, 1000.0, s.rate(cfg, 0), 1e-9)
	require.Zero(t, s.throttleMs(cfg, 0, 1000), "exactly at the bound")
	s.record(cfg, 500, 10_000)
	// 500 ms in, the window is those 500 ms plus 10 whole windows: 20000 bytes over
	// 10.5 s against 1000/s is (20000/10.5 - 1000)/1000 × 10.5 s = 9.5 s of throttle.
	require.InDelta(t, 20000/10.5, s.rate(cfg, 500), 1e-9)
	require.Equal(t, int64(9_500), s.throttleMs(cfg, 500, 1000))
	// A steady 1000 bytes a second for 30 s is measured at about 1000/s.
	var steady sensor
	for i := int64(0); i <= 30; i++ {
		steady.record(cfg, i*1000, 1000)
	}
	require.InDelta(t, 1000.0, steady.rate(cfg, 30_000), 100)
	require.LessOrEqual(t, len(steady.samples), cfg.WindowNum+1, "samples are reused")
	// Silent for the whole span (11 s): everything is forgotten.
	require.Zero(t, steady.rate(cfg, 30_000+11_000))
	// A bound of 0 throttles for the whole span.
	var zero sensor
	zero.record(cfg, 0, 1)
	require.Equal(t, int64(11_000), zero.throttleMs(cfg, 0, 0))
}

// sendAs steps a request as principal/client id on conn, settles, and returns its id
// and whether it was answered.
func (h *harness) sendAs(conn uint64, principal, clientID string, req kmsg.Request) (uint64,
	bool) {
	h.t.Helper()
	h.nextID++
	id := h.nextID
	decoded := roundTripRequest(h.t, req)
	h.env.requests[id] = decoded
	h.step(Request{Conn: conn, ID: id, ClientID: clientID, Principal: principal, Msg: decoded})
	h.settle()
	_, ok := h.env.replies[id]
	return id, ok
}

func TestProduceOverQuotaIsThrottledMutedAndHeld(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	h.mustSetQuota([]string{"client-id", "slow"}, "producer_byte_rate", 500)
	payload := strings.Repeat("x", 2000)
	rec := values(payload, payload)
	n := float64(len(rec))
	require.Less(t, n/10, 500.0)
	// The first request fits (n bytes over 10 s), the second is over the bound: its
	// answer says how long, and mutes the connection as long.
	id, ok := h.sendAs(1, "", "slow", produceReq(-1, "t", 0, rec))
	require.True(t, ok)
	require.Zero(t, h.env.replies[id].MuteMs)
	id, ok = h.sendAs(1, "", "slow", produceReq(-1, "t", 0, rec))
	require.True(t, ok)
	r := h.env.replies[id]
	require.Zero(t, producePart(t, r.Msg).ErrorCode, "a throttled produce is still written")
	tm := r.Msg.(*kmsg.ProduceResponse).ThrottleMillis
	want := (2*n/10 - 500) / 500 * 10_000 // (rate - bound) / bound × window
	require.InDelta(t, want, float64(tm), 1)
	require.Equal(t, int64(tm), r.MuteMs, "the reply mutes the connection as long")

	// A request the driver read ahead on that connection waits out the throttle.
	held, ok := h.sendAs(1, "", "slow", produceReq(-1, "t", 0, rec))
	require.False(t, ok, "held while the connection's throttle runs")
	// Another client id is not throttled; another connection of the same client id
	// shares its meter (throttled, not held); acks=0 is muted all the same.
	id, ok = h.sendAs(2, "", "fast", produceReq(-1, "t", 0, rec))
	require.True(t, ok)
	require.Zero(t, h.env.replies[id].MuteMs)
	id, ok = h.sendAs(3, "", "slow", produceReq(0, "t", 0, rec))
	require.True(t, ok)
	require.Nil(t, h.env.replies[id].Msg)
	require.Greater(t, h.env.replies[id].MuteMs, int64(tm), "the excess grew")

	h.advance(time.Duration(tm-1) * time.Millisecond)
	_, ok = h.reply(held)
	require.False(t, ok)
	h.advance(time.Millisecond)
	_, ok = h.reply(held)
	require.True(t, ok, "served once the throttle ended")
	require.Equal(t, []uint64{held}, h.env.servedHeld, "the Env was told which request it serves")
	// Once the client kept away long enough, it is within its quota again.
	h.advance(60 * time.Second)
	id, ok = h.sendAs(1, "", "slow", produceReq(-1, "t", 0, rec))
	require.True(t, ok)
	require.Zero(t, h.env.replies[id].MuteMs)

	// A closed connection's held requests are dropped; a draining node serves them.
	h.sendAs(1, "", "slow", produceReq(-1, "t", 0, rec))
	h.sendAs(1, "", "slow", produceReq(-1, "t", 0, rec))
	gone, ok := h.sendAs(1, "", "slow", produceReq(-1, "t", 0, rec))
	require.False(t, ok)
	h.step(ConnClosed{Conn: 1})
	h.advance(time.Minute)
	_, ok = h.reply(gone)
	require.False(t, ok, "nobody reads a closed connection's answers")
	h.sendAs(4, "", "slow", produceReq(-1, "t", 0, rec))
	h.sendAs(4, "", "slow", produceReq(-1, "t", 0, rec))
	last, ok := h.sendAs(4, "", "slow", produceReq(-1, "t", 0, rec))
	require.False(t, ok)
	h.step(Drain{})
	h.settle()
	_, ok = h.reply(last)
	require.True(t, ok, "served at the drain")
	require.Equal(t, []uint64{held, last}, h.env.servedHeld,
		"the served held requests, not the dropped one")
}

func TestFetchOverQuotaIsThrottledCappedAndMuted(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	payload := strings.Repeat("y", 1000)
	for range 30 {
		h.do(produceReq(-1, "t", 0, values(payload)))
	}
	h.mustSetQuota([]string{"user", "<default>"}, "consumer_byte_rate", 500)
	// The response is capped at what the quota lets through in 10 windows (5000 bytes);
	// the first batch always comes whole.
	id, _ := h.sendAs(1, "User:carol", "reader", fetchReq("t", 0, 0, 0, 1))
	r := h.env.replies[id]
	p := fetchPart(t, r.Msg)
	require.LessOrEqual(t, len(p.RecordBatches), 5000+1100)
	require.Greater(t, len(p.RecordBatches), 1000)
	got := len(p.RecordBatches)
	tm := r.Msg.(*kmsg.FetchResponse).ThrottleMillis
	want := (float64(got)/10 - 500) / 500 * 10_000
	if want < 0 {
		want = 0
	}
	require.InDelta(t, want, float64(tm), 1)
	require.Equal(t, int64(tm), r.MuteMs)
	// A second fetch right away, on another connection, is over the quota.
	id, _ = h.sendAs(3, "User:carol", "reader", fetchReq("t", 0, 5, 0, 1))
	require.Positive(t, h.env.replies[id].MuteMs)
	// Another user has a quota of its own (user=<default> meters each user alone).
	id, _ = h.sendAs(2, "User:dave", "reader", fetchReq("t", 0, 0, 0, 1))
	require.Equal(t, int64(tm), h.env.replies[id].MuteMs)
}
