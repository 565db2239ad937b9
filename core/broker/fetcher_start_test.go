package broker

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A follower that restarted at its leader's log start, where a DeleteRecords cut
// inside a batch, gets the whole batch holding that offset: it restarts its log at the
// batch's base offset and copies the leader's log from there, as Kafka's follower does,
// instead of refusing the batch on every fetch (sim seed 16 of the disk-loss test: a
// node whose disk was lost never rejoined the ISR).
func TestFollowerRestartsAtTheLeadersBatchHoldingItsLogStart(t *testing.T) {
	h, l, tp := followerSetup(t)
	lead := l.lead(tp, 1, nil)
	l.produce(tp, values("a", "b", "c"), values("d", "e", "f"), values("g"))
	_, code := lead.DeleteRecordsBefore(4) // inside the batch [3, 6)
	require.Zero(t, code)
	h.b.follow(tp, 2, 1)
	h.serve(map[int32]*testLeader{2: l}) // OFFSET_OUT_OF_RANGE at 0
	_, msg := h.onePeer()
	require.IsType(t, &kmsg.ListOffsetsRequest{}, msg)
	h.serve(map[int32]*testLeader{2: l}) // ListOffsets: reset to 4
	rep := h.b.replicas[tp]
	require.EqualValues(t, 4, rep.EndOffset())
	h.catchUp(l, tp, 20)
	require.EqualValues(t, 7, rep.EndOffset(), "caught up")
	require.Equal(t, l.logs[tp].Batches()[1:], h.followerBatches(tp))
	require.EqualValues(t, 3, rep.StartOffset(), "the batch's base: its log start moves "+
		"with the leader's once its high-water mark passed it (followLogStart)")
}
