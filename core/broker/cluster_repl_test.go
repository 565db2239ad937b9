package broker

// Two or three brokers in one test, wired together: each broker's SendPeer requests
// are answered by a fake controller (AlterPartition: decided with core/controller's
// DecideAlterPartition on the controller node's image, its record committed to every
// node) or by the peer broker itself (anything else goes to its Request input, and its
// answer comes back as the PeerReply). The follower fetcher is another branch's: the
// followers here are driven by hand (replicate), fetching from the leader with their
// replica id and appending what they get to their own replica.

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/controller"
	"github.com/sluicemq/sluice/core/meta"
)

type testCluster struct {
	t          *testing.T
	nodes      map[int32]*harness
	ids        []int32
	controller int32
	inflight   []peerCall // requests delivered to a peer, not answered yet
	// handFollowers: the followers are driven by hand (replicate); the fetchers'
	// requests are held forever.
	handFollowers bool
	held          []PeerRequest
	// cut nodes: their requests and the answers to them wait (heal fails them, as a
	// driver's timeout would: E7).
	cut     map[int32]bool
	cutHeld []peerCall
	// observe, when set, sees every peer request as it is sent.
	observe func(from int32, p PeerRequest)
}

// peerCall is a SendPeer delivered to a peer broker as request reqID there.
type peerCall struct {
	from  int32
	p     PeerRequest
	reqID uint64
}

func newTestCluster(t *testing.T, controllerID int32, nodes ...int32) *testCluster {
	return newTestClusterWith(t, nil, controllerID, nodes...)
}

// newTestClusterWith is newTestCluster with every node's Config changed by opts.
func newTestClusterWith(t *testing.T, opts []func(*Config), controllerID int32,
	nodes ...int32) *testCluster {
	c := &testCluster{t: t, nodes: map[int32]*harness{}, ids: nodes, controller: controllerID,
		handFollowers: true}
	for _, id := range nodes {
		// Each node its own seed: nodes draw distinct member ids, as real ones do.
		cfg := DefaultConfig()
		cfg.NodeID = id
		for _, o := range opts {
			o(&cfg)
		}
		h := &harness{t: t, cfg: cfg, env: newFakeEnv(t), now: harnessStart, seed: int64(id)}
		h.boot()
		h.step(MetaLeaderChanged{Leader: controllerID, Epoch: 2})
		c.nodes[id] = h
	}
	c.commit(registerRecords(nodes...)...)
	return c
}

// commit commits records on every node, in order.
func (c *testCluster) commit(recs ...meta.Record) {
	for _, r := range recs {
		for _, id := range c.ids {
			c.nodes[id].commitMeta(r)
		}
	}
	c.settle()
}

// settle delivers everything on every node, peers included, until nothing is left.
func (c *testCluster) settle() {
	for range maxSettleRounds {
		for _, id := range c.ids {
			c.nodes[id].settle()
		}
		if c.deliverPeers() == 0 {
			return
		}
	}
	c.t.Fatalf("cluster still delivering after %d rounds", maxSettleRounds)
}

// deliverPeers delivers the peer requests sent so far and the answers ready; it
// returns how many things it delivered.
func (c *testCluster) deliverPeers() int {
	n := 0
	for _, id := range c.ids {
		for _, p := range c.nodes[id].takePeer() {
			n++
			if c.observe != nil {
				c.observe(id, p)
			}
			if _, ok := p.Msg.(*kmsg.AlterPartitionRequest); ok {
				c.answerAlter(id, p)
				continue
			}
			if c.handFollowers {
				c.held = append(c.held, p)
				continue
			}
			if c.cut[id] || c.cut[p.Node] {
				c.cutHeld = append(c.cutHeld, peerCall{from: id, p: p})
				continue
			}
			// At the highest version both serve, as the runtime's peer client
			// negotiates (net/peer.go).
			p.Msg.SetVersion(maxVersion(kmsg.Key(p.Msg.Key())))
			peer := c.nodes[p.Node]
			c.inflight = append(c.inflight, peerCall{from: id, p: p,
				reqID: peer.sendOn(uint64(1000+id), p.Msg)})
		}
	}
	kept := c.inflight[:0]
	for _, call := range c.inflight {
		if c.cut[call.from] || c.cut[call.p.Node] {
			kept = append(kept, call)
			continue
		}
		resp, ok := c.nodes[call.p.Node].reply(call.reqID)
		if !ok {
			kept = append(kept, call)
			continue
		}
		n++
		c.nodes[call.from].step(PeerReply{Node: call.p.Node, ID: call.p.ID, Msg: resp})
	}
	c.inflight = kept
	return n
}

// answerAlter is the controller: it decides the change on its node's image, commits
// its record everywhere, then answers (the record comes first, as in KRaft).
func (c *testCluster) answerAlter(from int32, p PeerRequest) {
	require.Equal(c.t, c.controller, p.Node, "AlterPartition goes to the controller")
	req := p.Msg.(*kmsg.AlterPartitionRequest)
	rp := req.Topics[0].Partitions[0]
	m := controller.AlterPartition{NodeID: req.BrokerID, BrokerEpoch: req.BrokerEpoch,
		Topic: req.Topics[0].Topic, Partition: rp.Partition, LeaderEpoch: rp.LeaderEpoch,
		PartitionEpoch: rp.PartitionEpoch, NewISR: rp.NewISR}
	im := c.nodes[c.controller].b.image
	rec, change, code, why := controller.DecideAlterPartition(im, m, controller.Eligible(im))
	c.t.Logf("AlterPartition from %d: isr %v → change %v code %d %s", from, rp.NewISR,
		change, code, why)
	if change {
		for _, id := range c.ids {
			c.nodes[id].commitMeta(rec)
		}
	}
	s, _, _ := im.Partition(m.Topic, m.Partition)
	c.nodes[from].step(PeerReply{Node: p.Node, ID: p.ID,
		Msg: alterResponse(m.Topic, m.Partition, code, s)})
}

// advance moves every node's clock by d, a second at a time, delivering in between.
func (c *testCluster) advance(d time.Duration) {
	for step := time.Duration(0); step < d; step += time.Second {
		for _, id := range c.ids {
			c.nodes[id].advance(min(time.Second, d-step))
		}
		c.settle()
	}
}

// replicate is one fetch of topic's partition p by follower node id from leader, by
// hand: it appends what the leader returned, makes it durable (the fetcher fetches
// again only then), and takes the leader's high-water mark. It returns the leader's
// answer.
func (c *testCluster) replicate(id, leader int32, topic string,
	p int32) kmsg.FetchResponseTopicPartition {
	c.t.Helper()
	rep := c.nodes[id].b.replicas[tp(topic, p)]
	require.True(c.t, rep.Follower())
	offset, last, ok := rep.FetchPosition()
	require.True(c.t, ok)
	s, _, _ := c.nodes[id].b.image.Partition(topic, p)
	resp := c.nodes[leader].do(followerFetch(id, topic, p, offset, last, s.LeaderEpoch, 0))
	c.settle()
	f := fetchOne(c.t, resp)
	requireCode(c.t, nil, f.ErrorCode)
	if len(f.RecordBatches) > 0 {
		_, err := rep.AppendReplicated(0, f.RecordBatches)
		require.NoError(c.t, err)
		rep.BeginSync()
		require.NoError(c.t, rep.Log().Sync())
		rep.SyncCompleted(nil)
	}
	rep.SetLeaderHighWatermark(f.HighWatermark)
	return f
}

func (c *testCluster) isr(topic string, p int32) []int32 {
	s, _, _ := c.nodes[c.controller].b.image.Partition(topic, p)
	out := slices.Clone(s.ISR)
	slices.Sort(out)
	return out
}

// Three brokers, RF 3, min.insync.replicas 2: acks=all waits for the followers; a
// follower that stops fetching is dropped from the ISR after replica.lag.time.max.ms,
// and the produce waiting on it is then answered; it joins again once it caught up;
// the followers hold the leader's bytes below the high-water mark; a leader change
// makes the old leader refuse produces.
func TestThreeBrokersReplicateAndChangeTheISR(t *testing.T) {
	c := newTestCluster(t, 2, 1, 2, 3)
	c.commit(assignedTopicRecord("r", []meta.Config{{Name: "min.insync.replicas",
		Value: "2"}}, pstate(ids(1, 2, 3), ids(1, 2, 3), 1, 0, 0)))
	leader := c.nodes[1]
	for _, id := range []int32{2, 3} {
		require.True(t, c.nodes[id].b.replicas[tp("r", 0)].Follower(), "node %d", id)
	}

	// acks=all is answered once both followers hold the batch.
	id := leader.send(produceReq(-1, "r", 0, values("a", "b")))
	c.settle()
	c.replicate(2, 1, "r", 0)
	c.replicate(3, 1, "r", 0)
	_, answered := leader.reply(id)
	require.False(t, answered, "the followers' fetch offsets do not cover it yet")
	c.replicate(2, 1, "r", 0)
	_, answered = leader.reply(id)
	require.False(t, answered, "node 3 is in the ISR and has not confirmed")
	c.replicate(3, 1, "r", 0)
	resp, answered := leader.reply(id)
	require.True(t, answered)
	requireCode(t, nil, producePart(t, resp).ErrorCode)

	// Node 3 stops fetching; node 2 keeps up. After replica.lag.time.max.ms node 3
	// leaves the ISR and a produce waiting for it is answered.
	for range 3 {
		c.advance(10 * time.Second)
		c.replicate(2, 1, "r", 0)
	}
	require.Equal(t, ids(1, 2, 3), c.isr("r", 0))
	slow := produceReq(-1, "r", 0, values("c"))
	slow.TimeoutMillis = 60_000
	id = leader.send(slow)
	c.settle()
	c.replicate(2, 1, "r", 0)
	c.replicate(2, 1, "r", 0)
	_, answered = leader.reply(id)
	require.False(t, answered, "node 3 still in the ISR")
	c.advance(10 * time.Second)
	c.replicate(2, 1, "r", 0)
	_, answered = leader.reply(id)
	require.False(t, answered, "node 3 lags, but not for replica.lag.time.max.ms yet")
	c.advance(6 * time.Second)
	require.Equal(t, ids(1, 2), c.isr("r", 0), "node 3 dropped")
	resp, answered = leader.reply(id)
	require.True(t, answered)
	requireCode(t, nil, producePart(t, resp).ErrorCode)

	// Node 3 catches up and joins again.
	for range 3 {
		c.replicate(3, 1, "r", 0)
	}
	require.Equal(t, ids(1, 2, 3), c.isr("r", 0), "node 3 back in the ISR")

	// Below the high-water mark the followers hold the leader's bytes.
	hwm := leader.b.replicas[tp("r", 0)].HighWatermark()
	require.Equal(t, int64(3), hwm)
	want := leader.b.replicas[tp("r", 0)].ReadForFollower(0, 1<<20).Records
	for _, n := range []int32{2, 3} {
		got := c.nodes[n].b.replicas[tp("r", 0)].ReadForFollower(0, 1<<20).Records
		require.Equal(t, want, got, "node %d", n)
	}

	// Leadership moves to node 2: node 1 refuses produces, node 2 takes them.
	c.commit(changeRecord("r", 0, pstate(ids(1, 2, 3), ids(1, 2, 3), 2, 1, 3)))
	pr := producePart(t, leader.do(produceReq(1, "r", 0, values("d"))))
	requireCode(t, kerr.NotLeaderForPartition, pr.ErrorCode)
	require.True(t, leader.b.replicas[tp("r", 0)].Follower())
	pr = producePart(t, c.nodes[2].do(produceReq(1, "r", 0, values("d"))))
	requireCode(t, nil, pr.ErrorCode)
	require.Equal(t, int64(3), pr.BaseOffset)
}

// Two brokers: a follower outside the ISR that holds the whole (empty) log joins it
// at its first fetch, through the leader's AlterPartition to the controller on the
// other node; its fetch parks and is answered once a produce appends; acks=all then
// waits for it.
func TestTwoBrokersParkedFollowerFetch(t *testing.T) {
	c := newTestCluster(t, 2, 1, 2)
	c.commit(assignedTopicRecord("r", nil, pstate(ids(1, 2), ids(1), 1, 0, 0)))
	leader := c.nodes[1]
	id := leader.send(followerFetch(2, "r", 0, 0, -1, 0, 5000))
	c.settle()
	_, answered := leader.reply(id)
	require.False(t, answered)
	require.Equal(t, ids(1, 2), c.isr("r", 0), "node 2 caught up and joined")
	requireCode(t, nil, producePart(t, leader.do(produceReq(1, "r", 0, values("a")))).ErrorCode)
	resp, answered := leader.reply(id)
	require.True(t, answered)
	require.NotEmpty(t, fetchOne(t, resp).RecordBatches)
	require.Equal(t, int64(0), leader.b.replicas[tp("r", 0)].HighWatermark())
	c.replicate(2, 1, "r", 0) // appends the batch
	c.replicate(2, 1, "r", 0) // says it holds it
	require.Equal(t, int64(1), leader.b.replicas[tp("r", 0)].HighWatermark())
	require.Equal(t, int64(1), c.nodes[2].b.replicas[tp("r", 0)].HighWatermark())
}
