package runtime

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/broker"
)

// samples is how many observations a stage histogram has, and their sum.
func samples(t *testing.T, o prometheus.Observer) (uint64, float64) {
	t.Helper()
	m := &dto.Metric{}
	require.NoError(t, o.(prometheus.Metric).Write(m))
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

// Two Produce requests the broker held for their connection's quota, served in one
// later step (broker.HeldObserver): an acks=1 one answered in it, an acks=all one
// answered after its fsync. Each has a held stage from its first step to the serving
// one, its append stage is the serving step, its batch counts in the topic's bytes in,
// and only the acks=all one has an fsync stage (before, the hold was timed as fsync
// and the bytes went uncounted).
func TestHeldProducesAreTimedFromTheStepThatServesThem(t *testing.T) {
	f := newFlowMetrics()
	lc, logs := observer.New(zapcore.WarnLevel)
	f.slow = &slowLog{lg: zap.New(lc), stages: true}
	tp := core.TopicPartition{Topic: "held"}
	produce := broker.Request{Msg: kmsg.NewPtrProduceRequest()}
	for _, id := range []uint64{1, 2} { // each held in its own step: no append, no answer
		produce.ID = id
		f.beginStep(produce, time.Now())
		f.endStep()
	}
	time.Sleep(5 * time.Millisecond) // the hold; the stages are wall-clock durations

	f.beginStep(broker.TimerFired{ID: 9}, time.Time{})
	f.servingHeld(1)
	f.appended(tp, &batch.Header{RecordCount: 1}, 100)
	f.replied(broker.Reply{ID: 1, Msg: kmsg.NewPtrProduceResponse()})
	f.servingHeld(2)
	f.appended(tp, &batch.Header{RecordCount: 2}, 150)
	f.servingHeld(3) // a held Fetch: nothing to time
	f.endStep()
	f.syncRequested(tp, 7, nil)
	f.beginStep(broker.SyncDone{TP: tp, Token: 7}, time.Time{})
	f.replied(broker.Reply{ID: 2, Msg: kmsg.NewPtrProduceResponse()})
	f.endStep()

	require.EqualValues(t, 250, f.topics["held"].bytesIn)
	require.EqualValues(t, 3, f.topics["held"].recordsIn)
	n, sum := samples(t, f.held)
	require.EqualValues(t, 2, n)
	require.GreaterOrEqual(t, sum, 2*0.005)
	for _, c := range []struct {
		o    prometheus.Observer
		want uint64
	}{{f.queue, 2}, {f.appendStage, 2}, {f.fsync, 1}, {f.replication, 1}} {
		n, _ := samples(t, c.o)
		require.Equal(t, c.want, n)
	}
	_, fsync := samples(t, f.fsync)
	require.Less(t, fsync, 0.005, "the hold is not in the fsync stage")

	lines := logs.FilterMessage("slow request").All()
	require.Len(t, lines, 2)
	for i, l := range lines {
		m := l.ContextMap()
		require.GreaterOrEqual(t, m["held_ms"], 5.0, "line %d: %v", i, m)
		require.Equal(t, i == 1, m["fsync_ms"] != nil, "line %d: %v", i, m)
	}
}
