package group

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sluicemq/sluice/core"
)

const testRetentionMs = 60_000

func newExpiryCoordinator() *Coordinator {
	cfg := DefaultConfig()
	cfg.InitialRebalanceDelayMs = 0
	cfg.OffsetsRetentionMs = testRetentionMs
	return NewCoordinator(cfg, &testRand{})
}

func expiredTPs(c *Coordinator, now core.Time, id string) []core.TopicPartition {
	for _, e := range c.ExpiredOffsets(now) {
		if e.Group == id {
			return e.TPs
		}
	}
	return nil
}

func TestOffsetValueV1CarriesTheExpiry(t *testing.T) {
	o := Offset{Offset: 9, LeaderEpoch: -1, Metadata: "m", CommitMs: 100, ExpireMs: 700}
	b := EncodeValue(o)
	require.Equal(t, []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 1, 'm', 0, 0, 0, 0, 0, 0, 0, 100,
		0, 0, 0, 0, 0, 0, 2, 0xbc}, b, "Kafka's value v1")
	got, err := DecodeValue(b)
	require.NoError(t, err)
	require.Equal(t, o, got)

	// Kafka writes -1 when a v1 value has no expiry.
	none := append(b[:len(b)-8:len(b)-8], 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	got, err = DecodeValue(none)
	require.NoError(t, err)
	require.Zero(t, got.ExpireMs)
	_, err = DecodeValue(b[:len(b)-1])
	require.Error(t, err)
}

func TestExpiryCountsFromWhenTheGroupEmptied(t *testing.T) {
	c := newExpiryCoordinator()
	g := c.GetOrCreate("g")
	now := core.Time(1e12)
	req := JoinRequest{ClientID: "c", ProtocolType: "consumer", SessionMs: 10_000,
		RebalanceMs: 10_000, Protocols: []Protocol{{Name: "range",
			Metadata: consumerMetadata("t")}}}
	var id string
	g.Join(now, req, func(r JoinResult) { id = r.MemberID })
	g.Sync(now, SyncRequest{MemberID: id, Generation: 1}, func(SyncResult) {})
	persist(now, g)
	require.Equal(t, Stable, g.State())
	tp := core.TopicPartition{Topic: "t"}
	c.ApplyOffset("g", tp, &Offset{Offset: 1, CommitMs: now.Millis()})

	now = now.AddMillis(5 * testRetentionMs)
	require.Empty(t, c.ExpiredOffsets(now), "a member subscribes to the topic")
	require.Zero(t, g.Leave(now, id, nil))
	require.Equal(t, Empty, g.State())
	require.Empty(t, c.ExpiredOffsets(now.AddMillis(testRetentionMs-1)))
	require.Equal(t, []core.TopicPartition{tp}, expiredTPs(c, now.AddMillis(testRetentionMs), "g"))

	c.WriteStarted("g", []core.TopicPartition{tp})
	require.Empty(t, c.ExpiredOffsets(now.AddMillis(testRetentionMs)), "a write is in flight")
	c.WriteEnded("g", []core.TopicPartition{tp})
	require.Empty(t, c.writing, "no bookkeeping left behind")

	// After a restart the empty time is unknown: the latest commit of the group stands in.
	r := newExpiryCoordinator()
	r.ApplyOffset("g", tp, &Offset{Offset: 1, CommitMs: 1000})
	r.ApplyOffset("g", core.TopicPartition{Topic: "u"}, &Offset{Offset: 1, CommitMs: 5000})
	r.MarkRecovered()
	require.Empty(t, r.ExpiredOffsets(core.Time(0).AddMillis(5000+testRetentionMs-1)))
	require.Len(t, expiredTPs(r, core.Time(0).AddMillis(5000+testRetentionMs), "g"), 2)
}

// TestExpiryPropertyRandomGroupLife drives a group through random joins, leaves,
// session expiries, commits (some with an explicit expiry), writes in flight and
// expiry passes, and checks every offset ExpiredOffsets names against KIP-211's rules
// as an outside observer sees them.
func TestExpiryPropertyRandomGroupLife(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := newExpiryCoordinator()
		now := core.Time(1e12)
		tps := []core.TopicPartition{{Topic: "a"}, {Topic: "b"}, {Topic: "b", Partition: 1}}
		ids := make([]string, 2)
		gens := make([]int32, 2)
		writing := map[core.TopicPartition]int{}
		var emptySince int64
		emptyKnown := false
		for range rapid.IntRange(1, 60).Draw(t, "steps") {
			g := c.GetOrCreate("g")
			wasEmpty := g.State() == Empty
			i := rapid.IntRange(0, 1).Draw(t, "client")
			switch rapid.IntRange(0, 7).Draw(t, "op") {
			case 0:
				topic := rapid.SampledFrom([]string{"a", "b"}).Draw(t, "subscribe")
				req := JoinRequest{MemberID: ids[i], ClientID: "c", ProtocolType: "consumer",
					SessionMs: 10_000, RebalanceMs: 10_000, Protocols: []Protocol{{
						Name: "range", Metadata: consumerMetadata(topic)}}}
				g.Join(now, req, func(r JoinResult) {
					if r.Err == 0 {
						ids[i], gens[i] = r.MemberID, r.Generation
					}
				})
			case 1:
				g.Sync(now, SyncRequest{MemberID: ids[i], Generation: gens[i]},
					func(SyncResult) {})
				persist(now, g)
			case 2:
				g.Leave(now, ids[i], nil)
			case 3:
				g.Heartbeat(now, ids[i], nil, gens[i])
			case 4:
				now = now.AddMillis(rapid.Int64Range(0, 2*testRetentionMs).Draw(t, "ms"))
				g.Tick(now)
			case 5:
				tp := rapid.SampledFrom(tps).Draw(t, "tp")
				o := Offset{Offset: 1, CommitMs: now.Millis()}
				if rapid.Bool().Draw(t, "explicit") {
					o.ExpireMs = now.Millis() + rapid.Int64Range(0, 3*testRetentionMs).Draw(t,
						"retention")
				}
				c.ApplyOffset("g", tp, &o)
			case 6:
				tp := rapid.SampledFrom(tps).Draw(t, "tp")
				if writing[tp] > 0 && rapid.Bool().Draw(t, "end") {
					writing[tp]--
					c.WriteEnded("g", []core.TopicPartition{tp})
				} else {
					writing[tp]++
					c.WriteStarted("g", []core.TopicPartition{tp})
				}
			case 7:
				checkExpiry(t, c, now, writing, emptySince, emptyKnown)
			}
			if g := c.Group("g"); g == nil {
				emptyKnown = false // forgotten; a new one starts without history
			} else if !wasEmpty && g.State() == Empty {
				emptySince, emptyKnown = now.Millis(), true
			}
		}
	})
}

// checkExpiry checks one expiry pass, then applies it as the broker would.
func checkExpiry(t *rapid.T, c *Coordinator, now core.Time,
	writing map[core.TopicPartition]int, emptySince int64, emptyKnown bool) {
	g := c.Group("g")
	if g == nil {
		require.Empty(t, c.ExpiredOffsets(now))
		return
	}
	expired := map[core.TopicPartition]bool{}
	for _, tp := range expiredTPs(c, now, "g") {
		expired[tp] = true
	}
	subscribed, known := g.SubscribedTopics()
	for _, po := range c.Offsets("g") {
		o, nowMs := po.Offset, now.Millis()
		due := o.CommitMs + testRetentionMs
		if emptyKnown && g.NumMembers() == 0 {
			due = max(due, emptySince+testRetentionMs)
		}
		if o.ExpireMs != 0 {
			due = o.ExpireMs
		}
		var want bool
		switch {
		case writing[po.TP] > 0 || nowMs < due:
			want = false
		case g.State() == Empty:
			want = true
		case g.State() == Stable && known:
			want = !contains(subscribed, po.TP.Topic)
		}
		if expired[po.TP] != want {
			t.Fatalf("%v (commit %d, expire %d) at %d, group %v, members %d, empty since %d "+
				"(%v): expired %v, want %v", po.TP, o.CommitMs, o.ExpireMs, nowMs, g.State(),
				g.NumMembers(), emptySince, emptyKnown, expired[po.TP], want)
		}
		delete(expired, po.TP)
	}
	require.Empty(t, expired, "expired offsets that do not exist")
	for _, tp := range expiredTPs(c, now, "g") {
		c.ApplyOffset("g", tp, nil)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
