package sim

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestQueueOrdersByTimeThenSequence(t *testing.T) {
	var q eventQueue
	var got []int
	for i, at := range []int64{30, 10, 20, 10, 30, 10} {
		i := i
		require.True(t, q.push(event{at: at, fn: func() { got = append(got, i) }}))
	}
	for {
		e, ok := q.pop()
		if !ok {
			break
		}
		e.fn()
	}
	require.Equal(t, []int{1, 3, 5, 2, 0, 4}, got)
}

func TestQueueIsBounded(t *testing.T) {
	q := eventQueue{limit: 2}
	require.True(t, q.push(event{}))
	require.True(t, q.push(event{}))
	require.False(t, q.push(event{}))
}

func TestStreamsAreIndependentAndRepeatable(t *testing.T) {
	a1, a2 := newStream(7, "a"), newStream(7, "a")
	b := newStream(7, "b")
	other := newStream(8, "a")
	var sa1, sa2, sb, so []int64
	for i := 0; i < 5; i++ {
		sa1 = append(sa1, a1.Int63())
		sb = append(sb, b.Int63())
		so = append(so, other.Int63())
	}
	// Drawing from b meanwhile must not shift a's sequence.
	for i := 0; i < 5; i++ {
		sa2 = append(sa2, a2.Int63())
		_ = b.Int63()
	}
	require.Equal(t, sa1, sa2)
	require.NotEqual(t, sa1, sb)
	require.NotEqual(t, sa1, so)
}

func TestDrawIsAFunctionOfTheSeed(t *testing.T) {
	require.Equal(t, Draw(5).Summary(), Draw(5).Summary())
	differ := false
	for s := uint64(1); s < 10 && !differ; s++ {
		differ = len(Draw(s).Summary()) != len(Draw(s+1).Summary()) ||
			Draw(s).Summary()[1] != Draw(s + 1).Summary()[1]
	}
	require.True(t, differ, "swarm testing: seeds must draw different configurations")
}

func TestSetOverridesAndRejects(t *testing.T) {
	c := Draw(1)
	require.NoError(t, c.Set("log.flush.policy", "never"))
	require.Equal(t, "never", c.Broker["log.flush.policy"])
	require.NoError(t, c.Set("faults.crash", "on"))
	require.True(t, c.Faults.Crash.On)
	require.NoError(t, c.Set("faults", "off"))
	require.False(t, c.Faults.Crash.On)
	require.NoError(t, c.Set("producers", "3"))
	require.Len(t, c.Producers, 3)
	require.NoError(t, c.Set("producer.acks", "1"))
	for _, p := range c.Producers {
		require.Equal(t, int16(1), p.Acks)
		require.False(t, p.Idempotent)
	}
	require.NoError(t, c.Set("producer.idempotent", "true"))
	require.Equal(t, int16(-1), c.Producers[0].Acks)
	c.Topics[0].Configs["retention.ms"] = "500"
	require.NoError(t, c.Set("log.retention.ms", "9000"))
	require.NotContains(t, c.Topics[0].Configs, "retention.ms",
		"a topic setting for the run replaces the drawn override")
	require.Error(t, c.Set("log.flush.policy", "sometimes"))
	require.Error(t, c.Set("no.such.setting", "1"))
	require.Error(t, c.Set("faults.meteor", "on"))
}

// quietConfig is a one-node world with no load and no faults, for machinery tests.
func quietConfig(seed uint64) Config {
	c := Draw(seed)
	_ = c.Set("faults", "off")
	_ = c.Set("nodes", "1")
	c.Producers, c.Readers, c.Admin.On = nil, nil, false
	return c
}

// runUntil dispatches events up to virtual time t.
func (w *World) runUntil(t int64) {
	for !w.stopped {
		at, ok := w.q.peekTime()
		if !ok || at > t {
			break
		}
		e, _ := w.q.pop()
		w.now = e.at
		w.tr.event(&e)
		e.fn()
	}
	w.now = max(w.now, t)
}

// metadataRoundTrip sends a Metadata request from the admin client and returns when
// (virtual ns) and what it got back.
func metadataRoundTrip(t *testing.T, w *World, until int64) (int64, map[string]int32, error) {
	t.Helper()
	cb := w.clients[0].base()
	at := int64(-1)
	var counts map[string]int32
	var gotErr error
	cb.requestMetadata([]string{"t0"}, 60_000, func(c map[string]int32, err error) {
		at, counts, gotErr = w.now, c, err
	})
	w.runUntil(until)
	require.NotEqual(t, int64(-1), at, "no answer by %s", fmtTime(until))
	return at, counts, gotErr
}

func newQuietWorld(t *testing.T, seed uint64) *World {
	t.Helper()
	w, err := New(quietConfig(seed), Options{})
	require.NoError(t, err)
	for _, n := range w.nodes {
		n.boot()
	}
	w.clients[0].start() // the admin creates the topics
	w.runUntil(2000 * ms)
	return w
}

func TestPartitionDelaysMessagesUntilItHeals(t *testing.T) {
	w := newQuietWorld(t, 3)
	start := w.now
	at, counts, err := metadataRoundTrip(t, w, w.now+1000*ms)
	require.NoError(t, err)
	require.Less(t, at-start, 500*ms)
	require.Equal(t, w.cfg.Topics[0].Partitions, counts["t0"])

	admin := w.clients[0].base()
	w.blocked[admin.actor] = &[2]int64{w.now + 5000*ms, 0}
	start = w.now
	at, _, err = metadataRoundTrip(t, w, w.now+10_000*ms)
	require.NoError(t, err)
	require.GreaterOrEqual(t, at-start, 5000*ms, "the request crossed a partitioned path")
}

func TestCrashResetsConnectionsAndRestartRecoversMetadata(t *testing.T) {
	w := newQuietWorld(t, 4)
	n := w.nodes[0]
	admin := w.clients[0].base()
	var lost error
	admin.send(kmsgMetadata("t0"), 60_000, func(_ kmsg.Response, err error) { lost = err })
	n.crash() // before the request arrives
	require.False(t, n.up)
	w.runUntil(w.now + 1000*ms)
	require.ErrorIs(t, lost, errConnLost)
	require.Len(t, w.hist.Crashes, 1)

	n.restart()
	_, counts, err := metadataRoundTrip(t, w, w.now+2000*ms)
	require.NoError(t, err)
	require.Equal(t, w.cfg.Topics[0].Partitions, counts["t0"],
		"topics are rebuilt from the committed metadata after a crash")
}

func TestPausedNodeQueuesInputsUntilItResumes(t *testing.T) {
	w := newQuietWorld(t, 5)
	w.nodes[0].pause(3000 * ms)
	start := w.now
	at, _, err := metadataRoundTrip(t, w, w.now+5000*ms)
	require.NoError(t, err)
	require.GreaterOrEqual(t, at-start, 3000*ms)
}

func TestResetConnFailsInFlightRequests(t *testing.T) {
	w := newQuietWorld(t, 6)
	admin := w.clients[0].base()
	var got error
	admin.send(kmsgMetadata("t0"), 60_000, func(_ kmsg.Response, err error) { got = err })
	w.resetConn(admin.c)
	w.runUntil(w.now + 1000*ms)
	require.ErrorIs(t, got, errConnLost)
	_, _, err := metadataRoundTrip(t, w, w.now+1000*ms)
	require.NoError(t, err, "the client reconnects")
}

func kmsgMetadata(topic string) kmsg.Request {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	return req
}
