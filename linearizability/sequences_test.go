package linearizability

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// idem records idempotent write #seq of producer 7's session 0.
func idem(b *builder, w string, seq int, call, ret int64, out Outcome, off int64) *Op {
	op := b.appendOp(w, 1, call, ret, out, -1, off)
	op.Idempotent, op.Producer, op.Seq, op.Attempts = true, 7, seq, 1
	return op
}

func refuse(op *Op, code int16, at int64, sent int) {
	op.SeqErr, op.SeqErrAt, op.SeqErrSent = code, at, sent
}

func finalRead(b *builder, start, end int64, vals ...string) {
	r := b.read(1000, 1001, start, end, vals...)
	r.Final, r.LogStart = true, start
	b.h.Finals = []Final{{TP: tp0, Start: start, End: end}}
}

func TestOutOfOrderAfterAcknowledgedPredecessorIsAnAnomaly(t *testing.T) {
	var b builder
	idem(&b, "a", 1, 10, 20, OK, 0)
	refuse(idem(&b, "b", 2, 30, 0, Unknown, -1), kerr.OutOfOrderSequenceNumber.Code, 40, 1)
	finalRead(&b, 0, 1, "a.0")
	rep := check(t, &b.h)
	require.Equal(t, 1, rep.Counts[SequenceRefused], "%v", rep.Summary(10))
	require.Contains(t, rep.Anomalies[0].Detail, "previous write a (op 0) was acknowledged")
}

// A refusal by a leader of an older epoch than the one that acknowledged the previous
// write is a deposed leader's, which never had it (seed 2488); from the same epoch or a
// later one it is still an anomaly.
func TestOutOfOrderFromADeposedLeaderIsExplained(t *testing.T) {
	for _, tc := range []struct {
		ackEpoch, refusedEpoch int32
		anomaly                bool
	}{{2, 1, false}, {2, 2, true}, {2, 3, true}, {2, -1, true}} {
		var b builder
		idem(&b, "a", 1, 10, 20, OK, 0).ServedEpoch = tc.ackEpoch
		op := idem(&b, "b", 2, 30, 0, Unknown, -1)
		refuse(op, kerr.OutOfOrderSequenceNumber.Code, 40, 1)
		op.SeqErrEpoch = tc.refusedEpoch
		finalRead(&b, 0, 1, "a.0")
		rep := check(t, &b.h)
		want := 0
		if tc.anomaly {
			want = 1
		}
		require.Equal(t, want, rep.Counts[SequenceRefused], "acked in %d, refused in %d: %v",
			tc.ackEpoch, tc.refusedEpoch, rep.Summary(10))
	}
}

func TestOutOfOrderOnFirstWriteIsAnAnomaly(t *testing.T) {
	var b builder
	refuse(idem(&b, "a", 1, 10, 0, Unknown, -1), kerr.OutOfOrderSequenceNumber.Code, 20, 1)
	finalRead(&b, 0, 0)
	rep := check(t, &b.h)
	require.Equal(t, 1, rep.Counts[SequenceRefused], "%v", rep.Summary(10))
}

func TestDuplicateSequenceForAWriteSentOnceIsAnAnomaly(t *testing.T) {
	var b builder
	idem(&b, "a", 1, 10, 20, OK, 0)
	refuse(idem(&b, "b", 2, 30, 50, OK, -1), kerr.DuplicateSequenceNumber.Code, 50, 1)
	finalRead(&b, 0, 2, "a.0", "b.0")
	rep := check(t, &b.h)
	require.Equal(t, 1, rep.Counts[SequenceRefused], "%v", rep.Summary(10))

	// Sent twice, the first attempt may have landed: a duplicate is then the truth.
	dup := b.h.Op(1)
	dup.SeqErrSent, dup.Attempts = 2, 2
	rep = check(t, &b.h)
	require.True(t, rep.OK(), "%v", rep.Summary(10))
}

func TestExplainedSequenceRefusalsAreNotAnomalies(t *testing.T) {
	// The predecessor not acknowledged yet when the refusal came: its fate is unknown.
	var b builder
	idem(&b, "a", 1, 10, 60, OK, 0)
	refuse(idem(&b, "b", 2, 30, 0, Unknown, -1), kerr.OutOfOrderSequenceNumber.Code, 40, 1)
	finalRead(&b, 0, 1, "a.0")
	rep := check(t, &b.h)
	require.True(t, rep.OK(), "%v", rep.Summary(10))

	// The topic deleted meanwhile: the new incarnation knows no producer.
	b = builder{}
	idem(&b, "a", 1, 10, 20, OK, 0)
	refuse(idem(&b, "b", 2, 30, 0, Unknown, -1), kerr.OutOfOrderSequenceNumber.Code, 40, 1)
	b.h.Deletions = []Deletion{{Topic: tp0.Topic, At: 25}}
	rep = check(t, &b.h)
	require.Zero(t, rep.Counts[SequenceRefused], "%v", rep.Summary(10))

	// The log start passed the predecessor: a restart may have rebuilt the producer
	// table without it.
	b = builder{}
	idem(&b, "a", 1, 10, 20, OK, 0)
	refuse(idem(&b, "b", 2, 30, 0, Unknown, -1), kerr.OutOfOrderSequenceNumber.Code, 40, 1)
	finalRead(&b, 1, 1)
	rep = check(t, &b.h)
	require.Zero(t, rep.Counts[SequenceRefused], "%v", rep.Summary(10))

	// Nobody saw the log start move, but retention could have removed the predecessor.
	b = builder{}
	idem(&b, "a", 1, 10, 20, OK, 0).Built = 10
	refuse(idem(&b, "b", 2, 30, 0, Unknown, -1), kerr.OutOfOrderSequenceNumber.Code,
		5_000_000, 1)
	b.h.Retention = []RetentionSetting{{Topic: tp0.Topic, Name: "retention.ms", Value: 1}}
	rep = check(t, &b.h)
	require.Zero(t, rep.Counts[SequenceRefused], "%v", rep.Summary(10))
	b.h.Retention[0].Value = 10 // 10 ms: not yet
	rep = check(t, &b.h)
	require.Equal(t, 1, rep.Counts[SequenceRefused], "%v", rep.Summary(10))
}

func TestSequenceGapInFinalReadIsAnAnomaly(t *testing.T) {
	var b builder
	idem(&b, "a", 1, 10, 0, Unknown, -1)
	idem(&b, "b", 2, 11, 0, Unknown, -1)
	idem(&b, "c", 3, 12, 0, Unknown, -1)
	finalRead(&b, 0, 2, "a.0", "c.0")
	rep := check(t, &b.h)
	require.Equal(t, 1, rep.Counts[SequenceGap], "%v", rep.Summary(10))
	require.Contains(t, rep.Anomalies[0].Detail, "#2 (b) is not")

	// Another session's numbers, or writes below the log start, are no gap.
	b = builder{}
	idem(&b, "a", 1, 10, 0, Unknown, -1)
	idem(&b, "b", 2, 11, 0, Unknown, -1).Session = 1
	idem(&b, "c", 3, 12, 0, Unknown, -1)
	idem(&b, "d", 4, 13, 0, Unknown, -1)
	idem(&b, "e", 5, 14, 0, Unknown, -1)
	b.read(20, 21, 0, 4, "a.0", "b.0", "d.0", "e.0")
	finalRead(&b, 1, 4, "b.0", "d.0", "e.0")
	rep = check(t, &b.h)
	require.True(t, rep.OK(), "%v", rep.Summary(10))
}

// A retry of a write that may have landed, after five later writes of its session were
// sent, is out of Kafka's duplicate window: OUT_OF_ORDER_SEQUENCE_NUMBER is then what
// Kafka answers too (seed 137). Four later writes are not enough.
func TestOutOfOrderPastTheDuplicateWindowIsExplained(t *testing.T) {
	build := func(later int) *builder {
		b := &builder{}
		idem(b, "a", 1, 10, 20, OK, 0)
		refuse(idem(b, "b", 2, 30, 0, Unknown, -1), kerr.OutOfOrderSequenceNumber.Code, 90, 2)
		for i := range later {
			idem(b, string(rune('c'+i)), 3+i, 31+int64(i), 0, Unknown, -1)
		}
		return b
	}
	rep := check(t, &build(5).h)
	require.Zero(t, rep.Counts[SequenceRefused], "%v", rep.Summary(10))
	rep = check(t, &build(4).h)
	require.Equal(t, 1, rep.Counts[SequenceRefused], "%v", rep.Summary(10))
}

// A session's first write whose earlier attempt may have landed, retried after five
// later writes of the session were sent, is out of the duplicate window: the refusal
// is explained (seed 12670). Sent once, or with fewer later writes, it is not.
func TestOutOfOrderFirstWritePastTheDuplicateWindowIsExplained(t *testing.T) {
	build := func(later, sent int) *builder {
		b := &builder{}
		refuse(idem(b, "a", 0, 10, 0, Unknown, -1), kerr.OutOfOrderSequenceNumber.Code, 90,
			sent)
		for i := range later {
			idem(b, string(rune('c'+i)), 1+i, 31+int64(i), 40+int64(i), OK, int64(1+i))
		}
		return b
	}
	require.Zero(t, check(t, &build(5, 2).h).Counts[SequenceRefused])
	for _, c := range [][2]int{{4, 2}, {5, 1}} {
		rep := check(t, &build(c[0], c[1]).h)
		require.Equal(t, 1, rep.Counts[SequenceRefused], "later %d, sent %d: %v", c[0], c[1],
			rep.Summary(10))
	}
}
