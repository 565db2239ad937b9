package broker

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A PeerReply nobody waits for (the broker sends no inter-broker request yet, and a
// driver may deliver one late) is dropped: no panic, no reply, no state change.
func TestPeerReplyWithNoWaiterIsDropped(t *testing.T) {
	h := newHarness(t)
	h.step(PeerReply{Node: 2, ID: 7, Err: errors.New("connection refused")})
	h.step(PeerReply{Node: 2, ID: 8, Msg: kmsg.NewPtrApiVersionsResponse()})
	require.Empty(t, h.env.replies)
	require.Empty(t, h.env.peerReqs)
	resp := h.do(kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse)
	require.Len(t, resp.Brokers, 1, "the broker still serves")
}
