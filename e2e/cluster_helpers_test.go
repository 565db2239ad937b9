package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A cluster of `sluice node` processes on 127.0.0.1, started as a user would:
// --id, --listen, --advertise, --controller-listen, --voters, --data.

// clusterSettings are the config file of every node of a test cluster: a short broker
// session and ISR lag so that a dead or paused node is fenced and dropped within the
// test's bounds (the defaults, 9 s and 30 s, would make each fault last that long).
const clusterSettings = "broker.session.timeout.ms=3000\n" +
	"broker.heartbeat.interval.ms=500\n" +
	"replica.lag.time.max.ms=5000\n"

// clusterNode is one node process of a test cluster; its ports and data directory
// stay the same across restarts.
type clusterNode struct {
	id           int32
	kafka, ctl   string
	data, config string
	logPath      string
	cmd          *exec.Cmd
	waited       chan struct{}
	starts       int
	stopped      bool // SIGSTOPped
}

type testCluster struct {
	t      *testing.T
	nodes  []*clusterNode
	voters string
}

// startCluster starts n nodes of one quorum and waits until every node lists every
// broker.
func startCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	return startClusterWith(t, n, clusterSettings)
}

// startClusterWith is startCluster with settings as every node's config file ("" for
// the defaults).
func startClusterWith(t *testing.T, n int, settings string) *testCluster {
	t.Helper()
	c := &testCluster{t: t}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "node.properties")
	require.NoError(t, os.WriteFile(cfg, []byte(settings), 0o600))
	var vs []string
	for i := 1; i <= n; i++ {
		nd := &clusterNode{id: int32(i),
			kafka: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
			ctl:   fmt.Sprintf("127.0.0.1:%d", freePort(t)),
			data:  filepath.Join(dir, fmt.Sprintf("data%d", i)), config: cfg}
		c.nodes = append(c.nodes, nd)
		vs = append(vs, fmt.Sprintf("%d@%s", i, nd.ctl))
	}
	c.voters = strings.Join(vs, ",")
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			c.kill(nd)
		}
		if t.Failed() {
			for _, nd := range c.nodes {
				t.Logf("log of node %d (last 60 lines):\n%s", nd.id, tailFile(nd.logPath, 60))
			}
		}
	})
	for _, nd := range c.nodes {
		c.spawn(nd)
	}
	for _, nd := range c.nodes {
		c.awaitListening(nd)
	}
	c.awaitBrokers(n, 60*time.Second)
	t.Logf("%d nodes list every broker", n)
	return c
}

// spawn starts nd's process (its log goes to a new file per start).
func (c *testCluster) spawn(nd *clusterNode) {
	t := c.t
	nd.starts++
	nd.logPath = filepath.Join(filepath.Dir(nd.data),
		fmt.Sprintf("node%d.%d.log", nd.id, nd.starts))
	logf, err := os.Create(nd.logPath)
	require.NoError(t, err)
	nd.cmd = exec.Command(sluiceBinary(t), "node", "--id", fmt.Sprint(nd.id),
		"--listen", nd.kafka, "--advertise", nd.kafka, "--controller-listen", nd.ctl,
		"--voters", c.voters, "--data", nd.data, "--config", nd.config,
		"--http-listen=", "--log-format", "console")
	nd.cmd.Stdout, nd.cmd.Stderr = logf, logf
	require.NoError(t, nd.cmd.Start())
	nd.waited = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}, f *os.File) {
		_ = cmd.Wait()
		_ = f.Close()
		close(done)
	}(nd.cmd, nd.waited, logf)
}

// awaitListening waits until nd accepts connections (it does once it has a quorum
// leader or gave up waiting for one).
func (c *testCluster) awaitListening(nd *clusterNode) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-nd.waited:
			c.t.Fatalf("node %d exited during start; its log:\n%s", nd.id,
				tailFile(nd.logPath, 60))
		default:
		}
		if conn, err := net.DialTimeout("tcp", nd.kafka, 200*time.Millisecond); err == nil {
			conn.Close()
			return
		}
		time.Sleep(50 * time.Millisecond) // polling, bounded by the deadline
	}
	c.t.Fatalf("node %d did not listen on %s within 30s; its log:\n%s", nd.id, nd.kafka,
		tailFile(nd.logPath, 60))
}

// kill9 ends nd with SIGKILL and reaps it.
func (c *testCluster) kill(nd *clusterNode) {
	if nd.cmd == nil {
		return
	}
	if nd.stopped {
		_ = nd.cmd.Process.Signal(syscall.SIGCONT)
		nd.stopped = false
	}
	_ = nd.cmd.Process.Signal(syscall.SIGKILL)
	<-nd.waited
	nd.cmd = nil
}

// stop is a planned stop: SIGTERM, and the node exits on its own (bounded).
func (c *testCluster) stop(nd *clusterNode) {
	c.t.Helper()
	require.NoError(c.t, nd.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-nd.waited:
	case <-time.After(30 * time.Second):
		c.t.Fatalf("node %d still running 30s after SIGTERM", nd.id)
	}
	require.Equal(c.t, 0, nd.cmd.ProcessState.ExitCode(), "node %d's exit", nd.id)
	nd.cmd = nil
}

func (c *testCluster) restart(nd *clusterNode) {
	c.t.Helper()
	began := time.Now()
	c.spawn(nd)
	c.awaitListening(nd)
	c.t.Logf("node %d restarted, listening after %v", nd.id,
		time.Since(began).Round(time.Millisecond))
}

func (c *testCluster) pause(nd *clusterNode) {
	require.NoError(c.t, nd.cmd.Process.Signal(syscall.SIGSTOP))
	nd.stopped = true
}

func (c *testCluster) resume(nd *clusterNode) {
	require.NoError(c.t, nd.cmd.Process.Signal(syscall.SIGCONT))
	nd.stopped = false
}

func (c *testCluster) node(id int32) *clusterNode { return c.nodes[id-1] }

func (c *testCluster) running() []*clusterNode {
	var out []*clusterNode
	for _, nd := range c.nodes {
		if nd.cmd != nil && !nd.stopped {
			out = append(out, nd)
		}
	}
	return out
}

func (c *testCluster) seeds() []string {
	var out []string
	for _, nd := range c.nodes {
		out = append(out, nd.kafka)
	}
	return out
}

// request sends req to nd alone, bounded by d.
func (c *testCluster) request(nd *clusterNode, req kmsg.Request,
	d time.Duration) (kmsg.Response, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(nd.kafka), kgo.RetryTimeout(d),
		kgo.DialTimeout(d))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return cl.SeedBrokers()[0].Request(ctx, req)
}

// metadata is nd's Metadata answer for every topic (nil on error).
func (c *testCluster) metadata(nd *clusterNode) *kmsg.MetadataResponse {
	resp, err := c.request(nd, kmsg.NewPtrMetadataRequest(), 3*time.Second)
	if err != nil {
		return nil
	}
	return resp.(*kmsg.MetadataResponse)
}

// awaitBrokers waits until every running node lists n brokers.
func (c *testCluster) awaitBrokers(n int, d time.Duration) {
	c.t.Helper()
	c.await(d, fmt.Sprintf("every node lists %d brokers", n), func() bool {
		for _, nd := range c.running() {
			if m := c.metadata(nd); m == nil || len(m.Brokers) != n {
				return false
			}
		}
		return true
	})
}

// awaitHealthy waits until every running node reports every partition of topic led,
// with a full ISR (all replicas).
func (c *testCluster) awaitHealthy(topic string, partitions int, d time.Duration) {
	c.t.Helper()
	began := time.Now()
	defer func() {
		c.t.Logf("every partition led with a full ISR after %v",
			time.Since(began).Round(time.Millisecond))
	}()
	c.await(d, "every partition led with a full ISR on every node", func() bool {
		for _, nd := range c.running() {
			if !fullISR(c.metadata(nd), topic, partitions) {
				return false
			}
		}
		return true
	})
}

func fullISR(m *kmsg.MetadataResponse, topic string, partitions int) bool {
	if m == nil {
		return false
	}
	for _, tp := range m.Topics {
		if tp.Topic == nil || *tp.Topic != topic {
			continue
		}
		if tp.ErrorCode != 0 || len(tp.Partitions) != partitions {
			return false
		}
		for _, p := range tp.Partitions {
			if p.ErrorCode != 0 || p.Leader < 0 || len(p.ISR) != len(p.Replicas) {
				return false
			}
		}
		return true
	}
	return false
}

// partitionLeader is the leader of topic's partition as a running node reports it.
func (c *testCluster) partitionLeader(topic string, partition int32) int32 {
	p, ok := c.findPartition(topic, partition, func(p kmsg.MetadataResponseTopicPartition) bool {
		return p.Leader >= 0
	})
	if !ok {
		return -1
	}
	return p.Leader
}

// partitionISR is the ISR of topic's partition as the first running node that knows it
// reports it (nil if none does).
func (c *testCluster) partitionISR(topic string, partition int32) []int32 {
	p, _ := c.findPartition(topic, partition, func(kmsg.MetadataResponseTopicPartition) bool {
		return true
	})
	return p.ISR
}

// findPartition is topic's partition as the first running node whose answer has it and
// passes accept reports it.
func (c *testCluster) findPartition(topic string, partition int32,
	accept func(kmsg.MetadataResponseTopicPartition) bool) (kmsg.MetadataResponseTopicPartition, bool) {
	for _, nd := range c.running() {
		m := c.metadata(nd)
		if m == nil {
			continue
		}
		for _, tp := range m.Topics {
			if tp.Topic == nil || *tp.Topic != topic {
				continue
			}
			for _, p := range tp.Partitions {
				if p.Partition == partition && accept(p) {
					return p, true
				}
			}
		}
	}
	return kmsg.MetadataResponseTopicPartition{}, false
}

// quorumLeader is the metadata quorum's leader as a running node reports it
// (DescribeQuorum), -1 if none answers.
func (c *testCluster) quorumLeader() int32 {
	for _, nd := range c.running() {
		req := kmsg.NewPtrDescribeQuorumRequest()
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = "__cluster_metadata"
		rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{
			kmsg.NewDescribeQuorumRequestTopicPartition()}
		req.Topics = []kmsg.DescribeQuorumRequestTopic{rt}
		resp, err := c.request(nd, req, 3*time.Second)
		if err != nil {
			continue
		}
		r := resp.(*kmsg.DescribeQuorumResponse)
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			if l := r.Topics[0].Partitions[0].LeaderID; l >= 0 {
				return l
			}
		}
	}
	return -1
}

// await polls cond every 100 ms until it holds, failing the test after d.
func (c *testCluster) await(d time.Duration, what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(100 * time.Millisecond) // polling, bounded by the deadline
	}
}

func tailFile(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}
