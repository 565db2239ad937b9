package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicemq/sluice/core/replica"
)

// A leader whose log goes offline asks at once to hand the partition to the rest of
// its ISR; it never shrinks the ISR to itself while its followers cannot fetch, and
// the committed record makes another member lead in a new epoch.
func TestAnOfflineLeaderResignsInsteadOfShrinkingTheISR(t *testing.T) {
	h := leaderHarness(t, ids(1, 2, 3), "2")
	require.Empty(t, h.takePeer())
	h.env.logs[tp("r", 0)].AppendErr = fmt.Errorf("fsync: %w", replica.ErrLogOffline)
	requireCode(t, kerr.KafkaStorageError,
		producePart(t, h.do(produceReq(-1, "r", 0, values("a")))).ErrorCode)
	require.True(t, h.b.replicas[tp("r", 0)].Offline())

	sent := h.takePeer()
	require.Len(t, sent, 1, "the offline leader asks at once")
	_, p := alterRequest(t, sent[0])
	require.Equal(t, ids(2, 3), p.NewISR, "the ISR without the leader: a resignation")

	// The controller is unreachable for a while: the request times out and is retried,
	// and however long the followers stay behind, no shrink is asked.
	h.step(PeerReply{Node: sent[0].Node, ID: sent[0].ID, Err: errTestPeerT("timed out")})
	h.settle()
	for range 6 {
		h.advance(10 * time.Second)
		for _, s := range h.takePeer() {
			_, p := alterRequest(t, s)
			require.Equal(t, ids(2, 3), p.NewISR, "only the resignation, never a shrink")
			sent = []PeerRequest{s}
		}
	}
	answerAlter(t, h, sent[0])
	s, _, _ := h.b.image.Partition("r", 0)
	require.Equal(t, int32(2), s.Leader, "the first of the rest in replica order")
	require.Equal(t, ids(2, 3), s.ISR)
	require.Equal(t, int32(3), s.LeaderEpoch)
	require.True(t, h.b.replicas[tp("r", 0)].Follower(), "the old leader follows now")
	h.advance(30 * time.Second)
	require.Empty(t, h.takePeer(), "a follower proposes no ISR change")
}

// A leader alone in its ISR whose log goes offline keeps the partition: no one else
// holds every acknowledged record, so it asks for nothing and waits for a restart.
func TestAnOfflineLeaderAloneInTheISRStays(t *testing.T) {
	h := leaderHarness(t, ids(1), "1")
	h.env.logs[tp("r", 0)].AppendErr = fmt.Errorf("fsync: %w", replica.ErrLogOffline)
	requireCode(t, kerr.KafkaStorageError,
		producePart(t, h.do(produceReq(-1, "r", 0, values("a")))).ErrorCode)
	h.advance(30 * time.Second)
	require.Empty(t, h.takePeer())
	s, _, _ := h.b.image.Partition("r", 0)
	require.Equal(t, int32(1), s.Leader)
}
