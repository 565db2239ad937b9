package raftmeta

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/disk"
	"github.com/sluicemq/sluice/internal/testport"
)

// settleBound bounds every wait of the tests: a proposal not answered, or a node not
// caught up, within it fails the test with the suite's message.
const settleBound = 15 * time.Second

// fewChecks runs rapid with n cases, and at most 10 s of shrinking a failure, unless
// -rapid.checks or -rapid.shrinktime was given: every case starts real raft nodes,
// elections included.
func fewChecks(t *testing.T, n int) {
	t.Helper()
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for name, v := range map[string]string{"rapid.checks": strconv.Itoa(n),
		"rapid.shrinktime": "10s"} {
		if given[name] {
			continue
		}
		f := flag.Lookup(name)
		old := f.Value.String()
		if err := f.Value.Set(v); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Value.Set(old) })
	}
}

// testLogger is silent unless SLUICE_TEST_RAFT_LOG is set.
func testLogger() *zap.Logger {
	if os.Getenv("SLUICE_TEST_RAFT_LOG") == "" {
		return zap.NewNop()
	}
	lg, _ := zap.NewDevelopment()
	return lg
}

// freeAddrs picks n free ports on 127.0.0.1 outside the ephemeral range
// (internal/testport). A node rebinds its own after a restart.
func freeAddrs(n int) ([]string, error) {
	var out []string
	for i := 0; i < n; i++ {
		a, err := testport.Addr()
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// testNode is one node's durable state (a directory) and its running incarnation.
type testNode struct {
	id   int32
	addr string // its transport address
	dir  string
	st   *disk.PebbleState
	m    *Meta

	mu    sync.Mutex
	fatal error
}

// testCluster runs n raft nodes in this process on 127.0.0.1.
type testCluster struct {
	dir    string
	voters []Voter
	nodes  []*testNode
	timing Timing
	lg     *zap.Logger
	stats  *stats
	// tlsOf, when set, is each node's transport TLS (nil: plaintext); logOf, when set,
	// its logger.
	tlsOf func(id int32) *TransportTLS
	logOf func(id int32) *zap.Logger
}

// stats counts what the nodes were told, over every case of a test, so a test can
// tell that its cases reached commits and not only refusals.
type stats struct {
	mu       sync.Mutex
	outcomes map[broker.MetaOutcome]int
	applied  int
	leaders  int
}

func newStats() *stats { return &stats{outcomes: map[broker.MetaOutcome]int{}} }

func (s *stats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("applied %d, leader changes %d, answers %v", s.applied, s.leaders,
		s.outcomes)
}

func (c *testCluster) count(in broker.Input) {
	s := c.stats
	s.mu.Lock()
	defer s.mu.Unlock()
	switch in := in.(type) {
	case broker.MetaAnswer:
		s.outcomes[in.Outcome]++
	case broker.MetaApplied:
		s.applied++
	case broker.MetaLeaderChanged:
		s.leaders++
	}
}

func newTestCluster(n int, timing Timing, st *stats) (*testCluster, error) {
	dir, err := os.MkdirTemp("", "raftmeta-*")
	if err != nil {
		return nil, err
	}
	addrs, err := freeAddrs(n)
	if err != nil {
		return nil, err
	}
	c := &testCluster{dir: dir, timing: timing, lg: testLogger(), stats: st}
	for i := 0; i < n; i++ {
		id := int32(i + 1)
		c.voters = append(c.voters, Voter{ID: id, Addr: addrs[i]})
		c.nodes = append(c.nodes, &testNode{id: id, addr: addrs[i],
			dir: filepath.Join(dir, fmt.Sprintf("node%d", id))})
	}
	return c, nil
}

// addNonvoter adds a node that is not among the voters (down; boot it, then have the
// leader add it) and returns its index.
func (c *testCluster) addNonvoter() (int, error) {
	addrs, err := freeAddrs(1)
	if err != nil {
		return 0, err
	}
	id := int32(len(c.nodes) + 1)
	c.nodes = append(c.nodes, &testNode{id: id, addr: addrs[0],
		dir: filepath.Join(c.dir, fmt.Sprintf("node%d", id))})
	return len(c.nodes) - 1, nil
}

// boot starts node i's next incarnation; it panics when that fails (rapid reports it).
func (c *testCluster) boot(i int, deliver func(broker.Input)) broker.Start {
	nd := c.nodes[i]
	if nd.m != nil {
		panic(fmt.Sprintf("node %d booted twice", nd.id))
	}
	st, err := disk.OpenPebbleStateFS(context.Background(), vfs.Default,
		filepath.Join(nd.dir, "state"), c.lg)
	if err != nil {
		panic(err)
	}
	cfg := Config{NodeID: nd.id, Voters: c.voters, Addr: nd.addr, State: st,
		SnapshotDir: filepath.Join(nd.dir, "snapshots"),
		Logger:      c.lg.With(zap.Int32("node", nd.id)), Timing: c.timing,
		OnFatal: func(err error) {
			nd.mu.Lock()
			nd.fatal = err
			nd.mu.Unlock()
		}}
	if c.tlsOf != nil {
		cfg.TLS = c.tlsOf(nd.id)
	}
	if c.logOf != nil {
		cfg.Logger = c.logOf(nd.id)
	}
	var (
		m     *Meta
		start broker.Start
	)
	// The port was free when picked and is rebound at every restart; another process
	// may hold it for a moment.
	for deadline := time.Now().Add(5 * time.Second); ; {
		if m, start, err = Open(cfg); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		_ = st.Close()
		panic(err)
	}
	run := func(in broker.Input) bool {
		c.count(in)
		deliver(in)
		return true
	}
	if err := m.Run(run); err != nil {
		_ = m.Close()
		_ = st.Close()
		panic(err)
	}
	nd.st, nd.m = st, m
	return start
}

func (c *testCluster) crash(i int) {
	nd := c.nodes[i]
	if nd.m == nil {
		return
	}
	_ = nd.m.Close()
	_ = nd.st.Close()
	nd.m, nd.st = nil, nil
}

// settle polls done until it holds or settleBound passes; a node whose incarnation
// failed fatally fails the wait at once.
func (c *testCluster) settle(done func() bool) {
	for deadline := time.Now().Add(settleBound); time.Now().Before(deadline); {
		if err := c.fatalErr(); err != nil {
			panic(err)
		}
		if done() {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (c *testCluster) fatalErr() error {
	for _, nd := range c.nodes {
		nd.mu.Lock()
		err := nd.fatal
		nd.mu.Unlock()
		if err != nil {
			return fmt.Errorf("node %d: %w", nd.id, err)
		}
	}
	return nil
}

func (c *testCluster) close() {
	for i := range c.nodes {
		c.crash(i)
	}
	_ = os.RemoveAll(c.dir)
}

// The suite's views of a testCluster.

// clusterAdapter is metatest.Cluster.
type clusterAdapter struct{ *testCluster }

func (a clusterAdapter) Size() int          { return len(a.nodes) }
func (a clusterAdapter) NodeID(n int) int32 { return a.nodes[n].id }
func (a clusterAdapter) Boot(n int, deliver func(broker.Input)) broker.Start {
	return a.boot(n, deliver)
}
func (a clusterAdapter) Propose(n int, rec meta.Record, token uint64) {
	a.nodes[n].m.Propose(rec, token)
}
func (a clusterAdapter) Crash(n int) { a.crash(n) }
func (a clusterAdapter) Snapshot(n int) (bool, error) {
	return true, a.nodes[n].m.Snapshot()
}
func (a clusterAdapter) Settle(done func() bool) { a.settle(done) }
func (a clusterAdapter) Pass()                   { time.Sleep(2 * a.timing.Election) }
func (a clusterAdapter) Close()                  { a.close() }

// nodeAdapter is metatest.Adapter: a cluster of one. With waitLeader, Boot returns
// once the node leads, so the suite's proposals mostly commit; without, those made
// before its election are answered NotLeader.
type nodeAdapter struct {
	*testCluster
	waitLeader bool
}

func (a nodeAdapter) Boot(deliver func(broker.Input)) broker.Start {
	st := a.boot(0, deliver)
	if a.waitLeader {
		m := a.nodes[0].m
		a.settle(func() bool { l, _ := m.Leader(); return l == a.nodes[0].id })
	}
	return st
}
func (a nodeAdapter) Propose(rec meta.Record, token uint64) { a.nodes[0].m.Propose(rec, token) }
func (a nodeAdapter) Settle(done func() bool)               { a.settle(done) }
func (a nodeAdapter) Crash()                                { a.crash(0) }
func (a nodeAdapter) Snapshot(uint64, []meta.Record) (bool, error) {
	return true, a.nodes[0].m.Snapshot()
}
func (a nodeAdapter) Close() { a.close() }

// proposeTopic proposes, on node on, a topic record named after its token tok.
func (c *testCluster) proposeTopic(on int, tok uint64) {
	c.nodes[on].m.Propose(meta.Record{Kind: meta.KindTopicCreated,
		Topic: fmt.Sprint("t", tok), Partitions: 1}, tok)
}

// awaitCommitted waits until box holds proposal tok's answer, committed.
func awaitCommitted(t *testing.T, box *inbox, on int, tok uint64) {
	t.Helper()
	require.True(t, waitFor(settleBound, func() bool {
		an, ok := box.answers()[tok]
		return ok && an.Outcome == broker.MetaCommitted
	}), "proposal %d on node %d not committed", tok, on)
}
