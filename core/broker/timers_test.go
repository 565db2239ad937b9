package broker

import (
	"time"

	"testing"

	"github.com/stretchr/testify/require"
)

// A wait that ends early cancels its timer, so the driver holds nothing for it: an
// acks=all produce answered by its fsync and a long poll answered by new data leave no
// timer behind (E4). Without cancellation every such request kept a heap entry for its
// whole timeout and cost the node a step when it fired.
func TestAnsweredWaitsCancelTheirTimers(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	h.settle()
	before := len(h.env.timers)

	id := h.send(produceReq(-1, "t", 0, values("a")))
	require.Len(t, h.env.timers, before+1, "acks=all arms its request timeout")
	h.settle()
	_, ok := h.reply(id)
	require.True(t, ok, "answered once fsynced")
	require.Len(t, h.env.timers, before, "the answered produce's timer is gone")
	require.Equal(t, 1, h.env.cancelled)

	fid := h.send(fetchReq("t", 0, 1, 30_000, 1))
	require.Len(t, h.env.timers, before+1, "a parked fetch arms its max wait")
	h.send(produceReq(1, "t", 0, values("b")))
	h.settle()
	_, ok = h.reply(fid)
	require.True(t, ok, "the parked fetch is answered by the new data")
	require.Len(t, h.env.timers, before, "the answered fetch's timer is gone")
	require.Equal(t, 2, h.env.cancelled)
}

// A timer that fires is not cancelled afterwards, and cancelling an unknown id does
// nothing: only live timers reach the driver's CancelTimer.
func TestFiredTimerIsNotCancelled(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	h.settle()
	fid := h.send(fetchReq("t", 0, 0, 100, 1))
	h.advance(200 * time.Millisecond)
	_, ok := h.reply(fid)
	require.True(t, ok, "the long poll ran out and was answered empty")
	require.Zero(t, h.env.cancelled, "a fired timer is not cancelled")
	h.b.replicaManager.cancelTimer(12345)
	require.Zero(t, h.env.cancelled)
}
