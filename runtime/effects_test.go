package runtime

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/core/replica"
)

func TestTimersFireInTimeOrderAndNeverEarly(t *testing.T) {
	ts := newTimers()
	defer ts.stop()
	now := core.Time(1_000_000_000)
	ts.add(now, now+30, 3)
	ts.add(now, now+10, 2)
	ts.add(now, now+10, 1) // same time: set later but smaller id, fires first
	ts.add(now, now+50, 4)
	require.Empty(t, ts.due(now+9, nil))
	require.Equal(t, []uint64{1, 2}, ts.due(now+10, nil))
	require.Equal(t, []uint64{3}, ts.due(now+49, nil))
	require.Equal(t, now+50, ts.armed, "re-armed for the next one")
	require.Equal(t, []uint64{4}, ts.due(now+1000, nil))
	require.False(t, ts.isArmed)
}

func TestTimersArmTheRealTimer(t *testing.T) {
	ts := newTimers()
	defer ts.stop()
	start := time.Now()
	ts.add(0, core.Time(20*time.Millisecond), 1)
	select {
	case <-ts.C():
		require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	case <-time.After(5 * time.Second):
		t.Fatal("timer did not fire")
	}
}

// blockingLog is a replica.Log whose Sync waits until released, counting calls.
type blockingLog struct {
	replica.Log
	mu      sync.Mutex
	calls   int
	started chan struct{}
	release chan struct{}
}

func (l *blockingLog) Sync() error {
	l.mu.Lock()
	l.calls++
	l.mu.Unlock()
	l.started <- struct{}{}
	<-l.release
	return nil
}

func TestSyncerCoalescesOnlyIntoSyncsNotYetStarted(t *testing.T) {
	done := make(chan broker.Input, 10)
	s := newSyncer(1, func(in broker.Input) bool { done <- in; return true })
	defer s.stop()
	log := &blockingLog{started: make(chan struct{}, 10), release: make(chan struct{})}
	tp := core.TopicPartition{Topic: "t"}

	s.submit(tp, 1, 1, log)
	s.kick()
	<-log.started // sync 1 runs: token 1 may miss later appends...
	s.submit(tp, 1, 2, log)
	s.submit(tp, 1, 3, log) // ...so 2 and 3 wait for a second sync, together
	s.kick()
	close(log.release)
	var tokens []uint64
	for range 3 {
		tokens = append(tokens, (<-done).(broker.SyncDone).Token)
	}
	require.Equal(t, []uint64{1, 2, 3}, tokens)
	require.Equal(t, 2, log.calls, "tokens 2 and 3 shared one sync")
}

type recordingMetaLog struct {
	mu   sync.Mutex
	recs []meta.Record
}

func (m *recordingMetaLog) Append(rec meta.Record) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs = append(m.recs, rec)
	return uint64(len(m.recs)), nil
}

func TestMetaWriterCommitsInProposalOrderAfterAppend(t *testing.T) {
	ml := &recordingMetaLog{}
	type commit struct {
		token    uint64
		appended int // records in the log when the commit was reported
		index    uint64
	}
	done := make(chan commit, 100)
	var applied uint64
	w := newMetaWriter(ml, func(in broker.Input) bool {
		ml.mu.Lock()
		defer ml.mu.Unlock()
		switch in := in.(type) {
		case broker.MetaApplied:
			applied = in.Index
		case broker.MetaAnswer:
			require.Equal(t, broker.MetaCommitted, in.Outcome)
			require.Equal(t, applied, in.Index, "M4: applied before the answer")
			done <- commit{in.Token, len(ml.recs), in.Index}
		}
		return true
	})
	defer w.stop()
	for i := range 50 {
		w.submit(meta.Record{Kind: meta.KindTopicCreated, Topic: "t"}, uint64(i))
	}
	for i := range 50 {
		c := <-done
		require.Equal(t, uint64(i), c.token, "proposal order")
		require.Equal(t, uint64(i+1), c.index)
		require.GreaterOrEqual(t, c.appended, i+1, "appended before reported")
	}
}
