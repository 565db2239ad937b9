package sim

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/broker"
)

// testPeerID marks the requests these tests send: in a two-node world the nodes' own
// lifecycles, controllers and fetchers send peer requests too, which the tests ignore.
const testPeerID = uint64(1) << 59

// newPeerWorld boots a quiet two-node world and records the PeerReplies node 0 gets for
// the tests' requests.
func newPeerWorld(t *testing.T) (*World, *[]broker.PeerReply) {
	t.Helper()
	cfg := quietConfig(7)
	cfg.Nodes = 2
	w, err := New(cfg, Options{})
	require.NoError(t, err)
	for _, n := range w.nodes {
		n.boot()
	}
	w.runUntil(100 * ms)
	var got []broker.PeerReply
	w.onPeerReply = func(node int32, r broker.PeerReply) {
		if r.ID&testPeerID == 0 {
			return // the cluster's own traffic
		}
		require.Equal(t, int32(0), node, "only node 0 sends")
		r.ID &^= testPeerID
		got = append(got, r)
	}
	return w, &got
}

func sendPeer(w *World, from int, p broker.PeerRequest) {
	n := w.nodes[from]
	p.ID |= testPeerID
	nodeEnv{n: n, gen: n.gen}.SendPeer(p)
}

// E7: a request to a live peer is answered with the peer's response, at the highest
// version both support, after network latency.
func TestPeerRequestIsAnsweredByThePeer(t *testing.T) {
	w, got := newPeerWorld(t)
	start := w.now
	sendPeer(w, 0, broker.PeerRequest{Node: 2, ID: 41, Msg: kmsg.NewPtrMetadataRequest(),
		TimeoutMs: 1000})
	w.runUntil(w.now + 500*ms)
	require.Len(t, *got, 1)
	r := (*got)[0]
	require.NoError(t, r.Err)
	require.Equal(t, int32(2), r.Node)
	require.Equal(t, uint64(41), r.ID)
	md, ok := r.Msg.(*kmsg.MetadataResponse)
	require.True(t, ok, "%T", r.Msg)
	for _, v := range broker.SupportedVersions {
		if v.Key == md.Key() {
			require.Equal(t, v.Max, md.GetVersion(), "the highest version both support")
		}
	}
	require.Len(t, md.Brokers, 1)
	require.Equal(t, int32(2), md.Brokers[0].NodeID, "answered by node 2")
	require.Greater(t, w.now, start)
}

// E7: a request that cannot be answered (no such node, the peer down) gets one reply
// with Err; one whose sender died gets none (E6).
func TestPeerRequestFailuresAreAnsweredOnce(t *testing.T) {
	w, got := newPeerWorld(t)
	sendPeer(w, 0, broker.PeerRequest{Node: 9, ID: 1, Msg: kmsg.NewPtrMetadataRequest(),
		TimeoutMs: 1000})
	require.Empty(t, *got, "not answered inside the step (E5)")
	w.runUntil(w.now + 10*ms)
	require.Len(t, *got, 1)
	require.Error(t, (*got)[0].Err)

	w.nodes[1].crash()
	sendPeer(w, 0, broker.PeerRequest{Node: 2, ID: 2, Msg: kmsg.NewPtrMetadataRequest(),
		TimeoutMs: 1000})
	w.runUntil(w.now + 2000*ms)
	require.Len(t, *got, 2)
	require.Equal(t, uint64(2), (*got)[1].ID)
	require.Error(t, (*got)[1].Err, "the peer is down")

	w.nodes[1].restart()
	w.runUntil(w.now + 100*ms)
	sendPeer(w, 0, broker.PeerRequest{Node: 2, ID: 3, Msg: kmsg.NewPtrMetadataRequest(),
		TimeoutMs: 1000})
	w.nodes[0].crash() // the sender dies with its request in flight
	w.nodes[0].restart()
	w.runUntil(w.now + 3000*ms)
	require.Len(t, *got, 2, "a dead incarnation's request is answered to nobody")

	sendPeer(w, 0, broker.PeerRequest{Node: 2, ID: 4, Msg: kmsg.NewPtrMetadataRequest(),
		TimeoutMs: 1000})
	w.runUntil(w.now + 500*ms)
	require.Len(t, *got, 3)
	require.NoError(t, (*got)[2].Err, "the restarted node reconnects")
}
