package e2e

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/linearizability"
)

// faultTopic is the topic of the fault tests: one partition per node, replication
// factor 3, min.insync.replicas=2.
const (
	faultTopic      = "faults"
	faultPartitions = 3
)

// TestClusterSurvivesKillsAndPauses runs 3 `sluice node` processes and an idempotent
// acks=all producer while the test kill -9's a partition leader (and restarts it),
// stops another with SIGTERM (a controlled shutdown, and restarts it), kill -9's the
// metadata quorum's leader (and restarts it), then pauses a node with SIGSTOP and
// resumes it. After each fault the producer must get acknowledgements
// again. At the end every partition is read from the start: every acknowledged record
// is there once, at its acknowledged offset, in the order produced (linearizability
// package, and a direct check).
func TestClusterSurvivesKillsAndPauses(t *testing.T) {
	if testing.Short() {
		t.Skip("real-process fault test")
	}
	c := startCluster(t, 3)
	createFaultTopic(t, c)
	p := startRecordingProducer(t, c.seeds())

	p.awaitAcks(t, 200, 30*time.Second, "before any fault")

	victim := c.node(c.partitionLeader(faultTopic, 0))
	t.Logf("kill -9 node %d, the leader of %s-0", victim.id, faultTopic)
	c.kill(victim)
	p.awaitAcks(t, 200, 45*time.Second, "after the partition leader's death")
	c.restart(victim)
	c.awaitHealthy(faultTopic, faultPartitions, 60*time.Second)

	victim = c.node(c.partitionLeader(faultTopic, 2))
	t.Logf("SIGTERM node %d, the leader of %s-2: a controlled shutdown", victim.id, faultTopic)
	c.stop(victim)
	require.Contains(t, tailFile(victim.logPath, 200), "controlled shutdown done")
	p.awaitAcks(t, 200, 45*time.Second, "after a controlled shutdown")
	c.restart(victim)
	c.awaitHealthy(faultTopic, faultPartitions, 60*time.Second)

	victim = c.node(c.quorumLeader())
	t.Logf("kill -9 node %d, the metadata quorum leader", victim.id)
	c.kill(victim)
	p.awaitAcks(t, 200, 45*time.Second, "after the quorum leader's death")
	c.restart(victim)
	c.awaitHealthy(faultTopic, faultPartitions, 60*time.Second)

	victim = c.node(c.partitionLeader(faultTopic, 1))
	t.Logf("SIGSTOP node %d, the leader of %s-1", victim.id, faultTopic)
	c.pause(victim)
	p.awaitAcks(t, 200, 45*time.Second, "while a node is paused")
	c.resume(victim)
	c.awaitHealthy(faultTopic, faultPartitions, 60*time.Second)
	p.awaitAcks(t, 200, 30*time.Second, "after the paused node resumed")

	p.stop(t)
	t.Log("production stopped; reading back")
	checkProduced(t, c, p)
}

// TestClusterNodeRestartsWithAWipedDataDirectory restarts a partition leader with an
// empty data directory (a replaced disk) during an idempotent acks=all produce. The
// wiped node must fetch everything back before it rejoins the ISRs; the two other
// nodes are then killed one after the other, so the wiped node's copies are what
// leads and what acks=all counts on. Every acknowledged record must still be read
// once, in order.
func TestClusterNodeRestartsWithAWipedDataDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("real-process fault test")
	}
	c := startCluster(t, 3)
	createFaultTopic(t, c)
	p := startRecordingProducer(t, c.seeds())
	p.awaitAcks(t, 300, 30*time.Second, "before any fault")

	wiped := c.node(c.partitionLeader(faultTopic, 0))
	t.Logf("kill -9 node %d, the leader of %s-0, and wipe its data directory", wiped.id,
		faultTopic)
	c.kill(wiped)
	require.NoError(t, os.RemoveAll(wiped.data))
	p.awaitAcks(t, 200, 45*time.Second, "after the partition leader's death")
	c.restart(wiped)
	c.awaitHealthy(faultTopic, faultPartitions, 60*time.Second)
	// The wiped node is a voter with an empty raft store: it must not vote before it
	// holds the quorum's log (docs/quorum.md, "The wiped-voter hazard").
	c.await(30*time.Second, "the wiped voter votes again once caught up", func() bool {
		log, err := os.ReadFile(wiped.logPath)
		require.NoError(t, err)
		require.Contains(t, string(log), "quorum has a log", "the gate was not raised")
		return strings.Contains(string(log), "it votes again")
	})

	for _, other := range c.nodes {
		if other == wiped {
			continue
		}
		t.Logf("kill -9 node %d", other.id)
		c.kill(other)
		p.awaitAcks(t, 200, 45*time.Second, fmt.Sprintf("after node %d's death", other.id))
		c.restart(other)
		c.awaitHealthy(faultTopic, faultPartitions, 60*time.Second)
	}
	p.stop(t)
	t.Log("production stopped; reading back")
	checkProduced(t, c, p)
}

func createFaultTopic(t *testing.T, c *testCluster) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...))
	require.NoError(t, err)
	defer cl.Close()
	minISR := "2"
	resp, err := kadm.NewClient(cl).CreateTopic(ctx(t, 20*time.Second), faultPartitions, 3,
		map[string]*string{"min.insync.replicas": &minISR}, faultTopic)
	require.NoError(t, err)
	require.NoError(t, resp.Err)
	c.awaitHealthy(faultTopic, faultPartitions, 30*time.Second)
}

// recordingProducer produces unique values round robin over the partitions with an
// idempotent acks=all client and records each record as one append of a
// linearizability history.
type recordingProducer struct {
	cl     *kgo.Client
	start  time.Time
	cancel context.CancelFunc
	done   chan struct{}
	halt   atomic.Bool // stop producing, let what is buffered be delivered
	wg     sync.WaitGroup

	mu    sync.Mutex
	h     linearizability.History
	acked int
	seq   [faultPartitions]int
	errs  map[string]int
}

func startRecordingProducer(t *testing.T, seeds []string, extra ...kgo.Opt) *recordingProducer {
	t.Helper()
	opts := append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(faultTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(5 * time.Millisecond), kgo.MaxBufferedRecords(200),
		kgo.RecordDeliveryTimeout(90 * time.Second),
		// A paused leader holds its connections open: notice within seconds, not 20 s.
		kgo.ProduceRequestTimeout(5 * time.Second), kgo.RequestTimeoutOverhead(3 * time.Second),
		kgo.RetryBackoffFn(
			func(int) time.Duration { return 100 * time.Millisecond })}, extra...)
	cl, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	p := &recordingProducer{cl: cl, start: time.Now(), cancel: cancel,
		done: make(chan struct{}), errs: map[string]int{}}
	t.Cleanup(func() { cancel(); <-p.done; cl.Close() })
	go p.run(ctx)
	return p
}

func (p *recordingProducer) now() int64 { return int64(time.Since(p.start)) }

// run produces until ctx ends (the test's end: buffered records fail) or halt is set;
// the client's buffer (MaxBufferedRecords) bounds what is in flight, so Produce blocks
// while no partition takes writes.
func (p *recordingProducer) run(ctx context.Context) {
	defer close(p.done)
	for i := 0; ctx.Err() == nil && !p.halt.Load(); i++ {
		if i%100 == 99 {
			// At most about 2,000 records a second: enough to keep every partition busy
			// through each fault, few enough for the final read and check to stay short.
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
		part := int32(i % faultPartitions)
		val := fmt.Sprintf("v%07d", i)
		p.mu.Lock()
		op := p.h.Add(linearizability.Op{Kind: linearizability.OpAppend,
			TP:   core.TopicPartition{Topic: faultTopic, Partition: part},
			Call: p.now(), Write: val, Values: []string{val}, Keys: []string{""},
			Seq: p.seq[part], Acks: -1, Idempotent: true, Offset: -1})
		p.seq[part]++
		p.mu.Unlock()
		p.wg.Add(1)
		p.cl.Produce(ctx, &kgo.Record{Partition: part, Value: []byte(val)},
			func(r *kgo.Record, err error) {
				defer p.wg.Done()
				p.mu.Lock()
				defer p.mu.Unlock()
				o := p.h.Op(op)
				o.Return = p.now()
				if err != nil {
					o.Outcome = linearizability.Unknown
					p.errs[err.Error()]++
					return
				}
				o.Outcome, o.Offset = linearizability.OK, r.Offset
				p.acked++
			})
	}
}

// awaitAcks waits until n more records are acknowledged.
func (p *recordingProducer) awaitAcks(t *testing.T, n int, d time.Duration, when string) {
	t.Helper()
	p.mu.Lock()
	from := p.acked
	p.mu.Unlock()
	began := time.Now()
	deadline := began.Add(d)
	for {
		p.mu.Lock()
		got := p.acked - from
		p.mu.Unlock()
		if got >= n {
			t.Logf("%d acknowledgements %s after %v", got, when, time.Since(began).Round(
				time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d acknowledgements %s within %v; errors: %v", got, n, when,
				d, p.errSummary())
		}
		time.Sleep(20 * time.Millisecond) // polling, bounded by the deadline
	}
}

func (p *recordingProducer) errSummary() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for e, n := range p.errs {
		out = append(out, fmt.Sprintf("%dx %s", n, e))
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// stop ends production and waits for every record's outcome.
func (p *recordingProducer) stop(t *testing.T) {
	t.Helper()
	p.halt.Store(true)
	<-p.done
	flushed := make(chan struct{})
	go func() { p.wg.Wait(); close(flushed) }()
	select {
	case <-flushed:
	case <-time.After(100 * time.Second):
		t.Fatal("records still without an outcome 100s after production stopped")
	}
}

// checkProduced reads every partition from the start to its high-water mark and checks
// the history: no acknowledged record lost or duplicated, per-partition order.
func checkProduced(t *testing.T, c *testCluster, p *recordingProducer) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...))
	require.NoError(t, err)
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx(t, 20*time.Second), faultTopic)
	require.NoError(t, err)
	require.NoError(t, ends.Error())
	h := &p.h
	for part := int32(0); part < faultPartitions; part++ {
		end, ok := ends.Lookup(faultTopic, part)
		require.True(t, ok)
		call := p.now()
		recs := readPartition(t, c.seeds(), part, end.Offset)
		tp := core.TopicPartition{Topic: faultTopic, Partition: part}
		h.Add(linearizability.Op{Kind: linearizability.OpRead, TP: tp, Call: call,
			Return: p.now(), Outcome: linearizability.OK, FetchOffset: 0, Records: recs,
			HWM: end.Offset, Final: true})
		h.Finals = append(h.Finals, linearizability.Final{TP: tp, Start: 0, End: end.Offset})
	}
	directCheck(t, h)
	rep := linearizability.Check(h, linearizability.Options{})
	t.Logf("history: %d appends, %d acknowledged, %d reads; producer errors: %s",
		rep.Appends, rep.Acknowledged, rep.Reads, p.errSummary())
	require.True(t, rep.OK(), "linearizability:\n%s", strings.Join(rep.Summary(20), "\n"))
}

// readPartition consumes partition part from offset 0 up to end.
func readPartition(t *testing.T, seeds []string, part int32, end int64) []linearizability.Record {
	t.Helper()
	if end == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(
		map[string]map[int32]kgo.Offset{faultTopic: {part: kgo.NewOffset().At(0)}}))
	require.NoError(t, err)
	defer cl.Close()
	var out []linearizability.Record
	c := ctx(t, 60*time.Second)
	for int64(len(out)) < end {
		fs := cl.PollFetches(c)
		require.NoError(t, c.Err(), "read %d of %d records of partition %d", len(out), end,
			part)
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < end {
				out = append(out, linearizability.Record{Offset: r.Offset,
					Value: string(r.Value), Timestamp: -1})
			}
		})
	}
	return out
}

// directCheck is the promise spelled out: every acknowledged value is read exactly
// once, at its acknowledged offset, and acknowledged values of a partition are at
// increasing offsets in the order they were produced.
func directCheck(t *testing.T, h *linearizability.History) {
	t.Helper()
	at := map[string][]int64{}
	for _, op := range h.Ops {
		if op.Kind == linearizability.OpRead {
			for _, r := range op.Records {
				at[r.Value] = append(at[r.Value], r.Offset)
			}
		}
	}
	last := map[int32]int64{}
	for _, op := range h.Ops {
		if op.Kind != linearizability.OpAppend {
			continue
		}
		offs := at[op.Values[0]]
		require.LessOrEqual(t, len(offs), 1, "value %s read at %v", op.Values[0], offs)
		if op.Outcome != linearizability.OK {
			continue
		}
		require.Equal(t, []int64{op.Offset}, offs, "acknowledged %s at %d", op.Values[0],
			op.Offset)
		prev, seen := last[op.TP.Partition]
		require.True(t, !seen || op.Offset > prev, "%s at %d after %d", op.Values[0],
			op.Offset, prev)
		last[op.TP.Partition] = op.Offset
	}
}
