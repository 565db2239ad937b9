package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	groupTopic = "grouped"
	groupName  = "survivor"
)

// TestClusterGroupSurvivesItsCoordinatorsDeath: 3 `sluice node` processes, a topic and
// __consumer_offsets with three replicas, and a franz-go group consumer that commits
// what it polled. The node coordinating the group (DescribeGroups) is killed with
// kill -9: the group goes on at the new coordinator (the new leader of the group's
// offsets partition) and keeps committing; every commit acknowledged before the kill
// is still there (OffsetFetch at the new coordinator reads at least it); the node is
// restarted; and a consumer that takes the group over resumes every partition at or
// after the last acknowledged commit, never before it.
func TestClusterGroupSurvivesItsCoordinatorsDeath(t *testing.T) {
	if testing.Short() {
		t.Skip("real-process fault test")
	}
	c := startCluster(t, 3)
	began := time.Now() // after the start (which builds the binary once)
	admCl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...))
	require.NoError(t, err)
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	minISR := "2"
	res, err := adm.CreateTopic(ctx(t, 20*time.Second), 3, 3,
		map[string]*string{"min.insync.replicas": &minISR}, groupTopic)
	require.NoError(t, err)
	require.NoError(t, res.Err)
	c.awaitHealthy(groupTopic, 3, 30*time.Second)

	stopProducing := produceSteadily(t, c.seeds())
	defer stopProducing()

	gc := startCommittingConsumer(t, c.seeds())
	gc.awaitCommits(t, 3, 30*time.Second, "before any fault")
	victimID := c.groupCoordinator(t, -1)
	victim := c.node(victimID)
	t.Logf("%v: kill -9 node %d, the coordinator of group %s", time.Since(began), victimID,
		groupName)
	c.kill(victim)
	atKill := gc.snapshot()
	t.Logf("acknowledged commits at the kill: %v", atKill)

	gc.awaitCommits(t, 3, 45*time.Second, "after the coordinator's death")
	newCoord := c.groupCoordinator(t, victimID)
	t.Logf("%v: the group goes on at node %d", time.Since(began), newCoord)
	requireCommittedAtLeast(t, adm, atKill, "at the new coordinator")

	c.restart(victim)
	c.awaitHealthy(groupTopic, 3, 60*time.Second)
	gc.awaitCommits(t, 1, 30*time.Second, "after the restart")

	if ends, err := adm.ListEndOffsets(ctx(t, 5*time.Second), groupTopic); err == nil {
		ends.Each(func(o kadm.ListedOffset) {
			t.Logf("%s-%d: leader epoch %d, end %d", o.Topic, o.Partition, o.LeaderEpoch,
				o.Offset)
		})
	}
	final := gc.close()
	t.Logf("acknowledged commits when the first consumer left: %v", final)
	requireCommittedAtLeast(t, adm, final, "after the first consumer left")
	resumed := firstOffsets(t, c.seeds(), 45*time.Second)
	for p, off := range final {
		require.GreaterOrEqual(t, resumed[p], off,
			"partition %d resumed before its last acknowledged commit", p)
	}
	t.Logf("a new consumer resumed at %v; %v after the cluster started", resumed,
		time.Since(began).Round(time.Millisecond))
}

// produceSteadily produces small records to groupTopic (acks=all) until stopped, so
// that the group always has more to consume.
func produceSteadily(t *testing.T, seeds []string) (stop func()) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(groupTopic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	require.NoError(t, err)
	pctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for pctx.Err() == nil {
			cl.Produce(pctx, &kgo.Record{Value: []byte("v")}, nil)
			time.Sleep(5 * time.Millisecond) // a steady trickle, bounded by stop
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
			cl.Close()
		})
	}
	t.Cleanup(stop)
	return stop
}

// committingConsumer is a group member that commits, after each poll, the offsets
// after the records it polled, and keeps the offsets the coordinator acknowledged.
type committingConsumer struct {
	cl      *kgo.Client
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	acked   map[int32]int64 // partition → highest acknowledged committed offset
	commits int             // acknowledged commit requests
	logf    func(format string, args ...any)
}

func startCommittingConsumer(t *testing.T, seeds []string) *committingConsumer {
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(groupName),
		kgo.ConsumeTopics(groupTopic), kgo.DisableAutoCommit(),
		kgo.SessionTimeout(10 * time.Second), kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.RebalanceTimeout(10 * time.Second), kgo.RequestRetries(1000),
		kgo.RetryTimeout(time.Minute)}
	cl, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	pctx, cancel := context.WithCancel(context.Background())
	gc := &committingConsumer{cl: cl, cancel: cancel, done: make(chan struct{}),
		acked: map[int32]int64{}, logf: t.Logf}
	go gc.run(pctx)
	t.Cleanup(func() { gc.close() })
	return gc
}

func (gc *committingConsumer) run(ctx context.Context) {
	defer close(gc.done)
	for ctx.Err() == nil {
		fs := gc.cl.PollFetches(ctx)
		for _, e := range fs.Errors() {
			if ctx.Err() == nil {
				gc.logf("fetch error on %s-%d: %v", e.Topic, e.Partition, e.Err)
			}
		}
		offs := map[int32]kgo.EpochOffset{}
		fs.EachRecord(func(r *kgo.Record) {
			offs[r.Partition] = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset + 1}
		})
		if len(offs) == 0 {
			continue
		}
		gc.cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{groupTopic: offs},
			gc.committed)
	}
}

// committed keeps what the coordinator acknowledged.
func (gc *committingConsumer) committed(_ *kgo.Client, req *kmsg.OffsetCommitRequest,
	resp *kmsg.OffsetCommitResponse, err error) {
	if err != nil || resp == nil {
		return
	}
	gc.mu.Lock()
	defer gc.mu.Unlock()
	asked := map[int32]int64{}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			asked[rp.Partition] = rp.Offset
		}
	}
	ok := false
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 {
				gc.acked[p.Partition] = max(gc.acked[p.Partition], asked[p.Partition])
				ok = true
			}
		}
	}
	if ok {
		gc.commits++
	}
}

func (gc *committingConsumer) snapshot() map[int32]int64 {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	out := make(map[int32]int64, len(gc.acked))
	for p, o := range gc.acked {
		out[p] = o
	}
	return out
}

// awaitCommits waits for n more acknowledged commit requests.
func (gc *committingConsumer) awaitCommits(t *testing.T, n int, d time.Duration,
	what string) {
	t.Helper()
	gc.mu.Lock()
	want := gc.commits + n
	gc.mu.Unlock()
	waitFor(t, d, "acknowledged commits "+what, func() bool {
		gc.mu.Lock()
		defer gc.mu.Unlock()
		return gc.commits >= want
	})
}

// close stops polling and closes the client (leaving the group), returning the
// acknowledged commits.
func (gc *committingConsumer) close() map[int32]int64 {
	if gc.cancel != nil {
		gc.cancel()
		<-gc.done
		gc.cl.Close()
		gc.cancel = nil
	}
	return gc.snapshot()
}

// groupCoordinator is the node coordinating the group as the running nodes name it
// (FindCoordinator to each; they must agree); it waits (bounded) until that is a node
// other than not (-1: any).
func (c *testCluster) groupCoordinator(t *testing.T, not int32) int32 {
	t.Helper()
	var id int32 = -1
	waitFor(t, 30*time.Second, "the group's coordinator", func() bool {
		id = -1
		for _, nd := range c.running() {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorKey, req.CoordinatorKeys = groupName, []string{groupName}
			resp, err := c.request(nd, req, 3*time.Second)
			if err != nil {
				return false
			}
			r := resp.(*kmsg.FindCoordinatorResponse)
			code, node := r.ErrorCode, r.NodeID
			if len(r.Coordinators) == 1 { // v4+
				code, node = r.Coordinators[0].ErrorCode, r.Coordinators[0].NodeID
			}
			if code != 0 || node == not || (id >= 0 && node != id) {
				return false
			}
			id = node
		}
		return id >= 1
	})
	return id
}

// requireCommittedAtLeast: OffsetFetch (at the group's coordinator) shows, for every
// partition, at least the offset acknowledged for it.
func requireCommittedAtLeast(t *testing.T, adm *kadm.Client, acked map[int32]int64,
	when string) {
	t.Helper()
	var offs kadm.OffsetResponses
	waitFor(t, 30*time.Second, "the group's committed offsets "+when, func() bool {
		var err error
		offs, err = adm.FetchOffsets(ctx(t, 5*time.Second), groupName)
		return err == nil
	})
	for p, want := range acked {
		got, ok := offs.Lookup(groupTopic, p)
		require.True(t, ok, "partition %d has no committed offset %s", p, when)
		require.NoError(t, got.Err)
		require.GreaterOrEqual(t, got.At, want,
			"partition %d: committed offset %s is before an acknowledged commit", p, when)
	}
}

// firstOffsets joins the group with a new consumer and returns the offset of the
// first record it gets from each partition.
func firstOffsets(t *testing.T, seeds []string, d time.Duration) map[int32]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(groupName),
		kgo.ConsumeTopics(groupTopic), kgo.DisableAutoCommit(),
		kgo.SessionTimeout(10*time.Second), kgo.HeartbeatInterval(500*time.Millisecond))
	require.NoError(t, err)
	defer cl.Close()
	first := map[int32]int64{}
	pctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for len(first) < 3 {
		fs := cl.PollFetches(pctx)
		require.NoError(t, pctx.Err(), "a new consumer got records of %d partitions", len(first))
		fs.EachRecord(func(r *kgo.Record) {
			if _, ok := first[r.Partition]; !ok {
				first[r.Partition] = r.Offset
			}
		})
	}
	return first
}
