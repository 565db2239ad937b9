package sim

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/broker"
)

// TestInputsOfACrashedProcessDieWithIt drives seed 1511's interleaving. A paused node
// queues a produce and then the SyncDone of a sync in flight; when it resumes, the
// produce's write trips an armed crash (a crash inside the step), so the SyncDone was
// meant for a process that no longer exists. It must die with it: before the fix the
// drain put it back on the queue, the restarted broker stepped it at its next resume,
// and its replica of the same topic incarnation, with no sync in flight, failed
// invariant R3 ("sync completed with none in flight").
func TestInputsOfACrashedProcessDieWithIt(t *testing.T) {
	for _, io := range []bool{false, true} {
		cfg := quietConfig(1511)
		cfg.Committers, cfg.Members, cfg.Vandals = nil, nil, nil
		cfg.Timing.IOFloorUs, cfg.Timing.IOMeanUs = 0, 0
		if io {
			cfg.Timing.IOFloorUs, cfg.Timing.IOMeanUs = 10, 100
		}
		w, err := New(cfg, Options{})
		require.NoError(t, err)
		n := w.nodes[0]
		n.boot()
		w.clients[0].start() // the admin creates the topics
		w.runUntil(2000 * ms)
		require.True(t, n.up)

		n.input(testProduce(w, 1)) // its SyncLog begins a sync of t0-0
		w.runUntil(w.now + 1)      // the Sync began: its fsyncs are in flight
		require.True(t, n.syncsBusy(), "a sync is in flight")
		n.pause(60_000 * ms)
		n.input(testProduce(w, 2)) // queued; its write will trip the crash
		w.runUntil(w.now + 1000*ms)
		require.Len(t, n.pending, 2, "the produce, then the SyncDone of the first sync")
		_, isSync := n.pending[1].(broker.SyncDone)
		require.True(t, isSync)

		n.armed = true
		n.fs.FreezeAfter(1) // the next disk write is the last: the machine crashes then
		n.resume()
		require.False(t, n.up, "the produce's write crashed the node")
		require.Empty(t, n.pending, "a dead process's inputs are not kept")

		n.restart()
		w.runUntil(w.now + 1000*ms)
		require.True(t, n.up)
		require.Empty(t, n.pending)
		n.pause(10 * ms)
		require.NotPanics(t, func() { w.runUntil(w.now + 1000*ms) })
	}
}

// testProduce is an acks=-1 write of one record to t0-0 on a connection nobody holds
// (the reply is dropped).
func testProduce(w *World, id uint64) broker.Request {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = -1, 30_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t0"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch.Build([]batch.KV{{Key: []byte("k"), Value: []byte("v")}},
		batch.NoProducer, (epochNs+w.now)/int64(ms))
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return broker.Request{Conn: 1 << 40, ID: id, ClientID: "test", Msg: req}
}

// syncsBusy reports whether one of the node's logs has a sync in flight.
func (n *node) syncsBusy() bool {
	for _, q := range n.syncs {
		if q.busy {
			return true
		}
	}
	return false
}
