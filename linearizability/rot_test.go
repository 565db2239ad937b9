package linearizability

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// A batch lost to rot takes its producer's state with it: the producer's retry of an
// unknown-outcome write lands again. Forgiven only for rot the world reported.
func TestRotExplainsAnIdempotentWriteSeenTwice(t *testing.T) {
	var b builder
	idem(&b, "x", 0, 5, 6, OK, 0)
	a := idem(&b, "a", 1, 10, 0, Unknown, -1)
	a.Attempts = 3
	idem(&b, "y", 2, 30, 31, OK, 2)
	idem(&b, "a2", 3, 40, 41, OK, 4)
	b.read(20, 21, 0, 2, "x.0", "a.0")
	finalRead(&b, 2, 5, "y.0", "a.0", "a2.0")
	rep := check(t, &b.h)
	require.Equal(t, 1, rep.Counts[Duplicate], "%v", rep.Summary(10))

	b.h.Trims = []Trim{{Topic: tp0.Topic, Partition: tp0.Partition, At: 25, Offset: 2, Rot: true}}
	rep = check(t, &b.h)
	require.True(t, rep.OK(), "%v", rep.Summary(10))

	// A DeleteRecords call is not rot: the producer state outlives it.
	b.h.Trims[0].Rot = false
	rep = check(t, &b.h)
	require.Equal(t, 1, rep.Counts[Duplicate], "%v", rep.Summary(10))
}

// Two copies above the rot point are still a duplicate.
func TestRotDoesNotExplainTwoLiveCopies(t *testing.T) {
	var b builder
	a := idem(&b, "a", 1, 10, 0, Unknown, -1)
	a.Attempts = 3
	finalRead(&b, 0, 2, "a.0", "a.0")
	b.h.Trims = []Trim{{Topic: tp0.Topic, Partition: tp0.Partition, At: 25, Offset: 0, Rot: true}}
	rep := check(t, &b.h)
	require.Equal(t, 1, rep.Counts[Duplicate], "%v", rep.Summary(10))
}

func TestRotExcusesOutOfOrderForARetriedFirstWrite(t *testing.T) {
	var b builder
	refuse(idem(&b, "a", 1, 10, 0, Unknown, -1), kerr.OutOfOrderSequenceNumber.Code, 20, 2)
	finalRead(&b, 0, 0)
	rep := check(t, &b.h)
	require.Equal(t, 1, rep.Counts[SequenceRefused], "%v", rep.Summary(10))
	b.h.Trims = []Trim{{Topic: tp0.Topic, Partition: tp0.Partition, At: 15, Offset: 3, Rot: true}}
	rep = check(t, &b.h)
	require.True(t, rep.OK(), "%v", rep.Summary(10))
	// Sent once, nothing of it can have rotted.
	b.h.Ops[0].SeqErrSent = 1
	rep = check(t, &b.h)
	require.Equal(t, 1, rep.Counts[SequenceRefused], "%v", rep.Summary(10))
}
