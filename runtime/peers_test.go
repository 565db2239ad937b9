package runtime

import (
	"context"
	"io"
	stdnet "net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sluicemq/sluice/core/broker"
	kafkanet "github.com/sluicemq/sluice/net"
)

// startPeerNode runs a node on a free loopback port with the given id and peers.
func startPeerNode(t *testing.T, id int32, peers map[int32]string, lg *zap.Logger) *Node {
	t.Helper()
	cfg := broker.DefaultConfig()
	cfg.NodeID = id
	n := NewNode(Options{ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(), Config: cfg,
		Logger: lg, DrainTimeout: 2 * time.Second, Peers: peers})
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, n.Close()) })
	return n
}

// collect is a deliver function that hands replies to a channel.
func collect(ch chan broker.PeerReply) func(broker.PeerReply) bool {
	return func(r broker.PeerReply) bool { ch <- r; return true }
}

func waitReply(t *testing.T, ch chan broker.PeerReply) broker.PeerReply {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no PeerReply within 10s")
		return broker.PeerReply{}
	}
}

// A request to a live peer is answered by that peer at the highest version both
// support; one to a node with no address fails at once (E7).
func TestPeersAnswerEveryRequestOnce(t *testing.T) {
	b := startPeerNode(t, 2, nil, zap.NewNop())
	ch := make(chan broker.PeerReply, 8)
	p := kafkanet.NewPeers(kafkanet.PeerOptions{}, collect(ch))
	defer p.Close()
	p.SetAddr(2, b.Addr())

	p.Send(broker.PeerRequest{Node: 2, ID: 1, Msg: kmsg.NewPtrMetadataRequest(),
		TimeoutMs: 5000})
	r := waitReply(t, ch)
	require.NoError(t, r.Err)
	require.Equal(t, uint64(1), r.ID)
	md := r.Msg.(*kmsg.MetadataResponse)
	require.Equal(t, int32(2), md.Brokers[0].NodeID)
	for _, v := range broker.SupportedVersions {
		if v.Key == md.Key() {
			require.Equal(t, v.Max, md.GetVersion(), "negotiated with ApiVersions")
		}
	}

	p.Send(broker.PeerRequest{Node: 3, ID: 2, Msg: kmsg.NewPtrMetadataRequest(),
		TimeoutMs: 5000})
	r = waitReply(t, ch)
	require.ErrorIs(t, r.Err, kafkanet.ErrPeerUnknown)
	require.Equal(t, uint64(2), r.ID)
	require.Empty(t, ch, "exactly one reply each")
}

// createTopic1 creates a topic of one partition.
func createTopic1(topic string) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, 1, 1
	req.Topics = append(req.Topics, ct)
	req.TimeoutMillis = 5000
	return req
}

// longPoll is a Fetch that the peer parks for maxWait: the partition has no data.
func longPoll(t *testing.T, topic string, maxWaitMs int32) *kmsg.FetchRequest {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = maxWaitMs, 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// The in-flight bound answers at once with ErrPeerBusy, a request unanswered within
// its TimeoutMs fails with ErrPeerTimeout, and a peer that went away fails requests.
func TestPeersBoundInFlightAndTimeOut(t *testing.T) {
	b := startPeerNode(t, 2, nil, zap.NewNop())
	ch := make(chan broker.PeerReply, 8)
	p := kafkanet.NewPeers(kafkanet.PeerOptions{MaxInFlight: 1}, collect(ch))
	defer p.Close()
	p.SetAddr(2, b.Addr())
	p.Send(broker.PeerRequest{Node: 2, ID: 1, Msg: createTopic1("lp"), TimeoutMs: 5000})
	require.NoError(t, waitReply(t, ch).Err)

	p.Send(broker.PeerRequest{Node: 2, ID: 2, Msg: longPoll(t, "lp", 3000), TimeoutMs: 300})
	p.Send(broker.PeerRequest{Node: 2, ID: 3, Msg: kmsg.NewPtrMetadataRequest(),
		TimeoutMs: 5000})
	got := map[uint64]broker.PeerReply{}
	for range 2 {
		r := waitReply(t, ch)
		got[r.ID] = r
	}
	require.ErrorIs(t, got[3].Err, kafkanet.ErrPeerBusy)
	require.ErrorIs(t, got[2].Err, kafkanet.ErrPeerTimeout)

	require.NoError(t, b.Close())
	p.Send(broker.PeerRequest{Node: 2, ID: 4, Msg: kmsg.NewPtrMetadataRequest(),
		TimeoutMs: 3000})
	r := waitReply(t, ch)
	require.Equal(t, uint64(4), r.ID)
	require.Error(t, r.Err, "the peer is gone")
}

// Through a node: Env.SendPeer's reply is stepped into the broker as an input (the
// broker, with no waiter yet, logs it), and Close ends requests in flight without
// delivering them.
func TestNodeStepsPeerReplies(t *testing.T) {
	b := startPeerNode(t, 2, nil, zap.NewNop())
	core, logs := observer.New(zap.DebugLevel)
	a := startPeerNode(t, 1, map[int32]string{2: b.Addr()}, zap.New(core))
	env{a}.SendPeer(broker.PeerRequest{Node: 2, ID: 9, Msg: createTopic1("lp"),
		TimeoutMs: 5000})
	require.Eventually(t, func() bool {
		return logs.FilterMessage("inter-broker reply with no waiter").
			FilterField(zap.Uint64("id", 9)).Len() == 1
	}, 10*time.Second, 5*time.Millisecond)

	env{a}.SendPeer(broker.PeerRequest{Node: 2, ID: 10, Msg: longPoll(t, "lp", 5000),
		TimeoutMs: 10_000})
	time.Sleep(200 * time.Millisecond) // bounded: lets the poll reach the peer and park
	start := time.Now()
	require.NoError(t, a.Close())
	require.Less(t, time.Since(start), 5*time.Second, "Close does not wait out the poll")
}

// A connection to a peer that breaks is reported through LinkDown with the peer's node
// id (the lifecycle then heartbeats at once if that peer is the controller's node:
// docs/controller.md, "Fencing a dead broker early"). The link goes through a proxy
// that cuts it while a long poll waits on it.
func TestPeersReportALostConnection(t *testing.T) {
	b := startPeerNode(t, 2, nil, zap.NewNop())
	px := startCutProxy(t, b.Addr())
	ch := make(chan broker.PeerReply, 8)
	down := make(chan int32, 8)
	p := kafkanet.NewPeers(kafkanet.PeerOptions{LinkDown: func(node int32) {
		select {
		case down <- node:
		default:
		}
	}}, collect(ch))
	defer p.Close()
	p.SetAddr(2, px.addr())
	p.Send(broker.PeerRequest{Node: 2, ID: 1, Msg: createTopic1("cut"), TimeoutMs: 5000})
	require.NoError(t, waitReply(t, ch).Err)
	require.Empty(t, down, "the connection is up")

	p.Send(broker.PeerRequest{Node: 2, ID: 2, Msg: longPoll(t, "cut", 5000),
		TimeoutMs: 8000})
	time.Sleep(200 * time.Millisecond) // the long poll is on the wire and parked
	px.cut()
	require.Error(t, waitReply(t, ch).Err, "the request on the cut connection fails")
	select {
	case node := <-down:
		require.Equal(t, int32(2), node)
	case <-time.After(10 * time.Second):
		t.Fatal("no LinkDown within 10s of the connection breaking")
	}
}

// cutProxy forwards connections to a node and can cut every one of them at once.
type cutProxy struct {
	ln    stdnet.Listener
	mu    sync.Mutex
	conns []stdnet.Conn
}

func startCutProxy(t *testing.T, to string) *cutProxy {
	t.Helper()
	ln, err := stdnet.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	px := &cutProxy{ln: ln}
	t.Cleanup(func() { ln.Close(); px.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := stdnet.Dial("tcp", to)
			if err != nil {
				c.Close()
				continue
			}
			px.mu.Lock()
			px.conns = append(px.conns, c, up)
			px.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	return px
}

func (px *cutProxy) addr() string { return px.ln.Addr().String() }

func (px *cutProxy) cut() {
	px.mu.Lock()
	defer px.mu.Unlock()
	for _, c := range px.conns {
		c.Close()
	}
	px.conns = nil
}
