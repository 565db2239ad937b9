package e2e

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Hostile fetches and metadata storms (issue 6 items 2 and 6): the broker caps what one
// Fetch returns and what one Metadata request may create.

const (
	fetchMaxBytes = 57_671_680 // fetch.max.bytes default
	maxBatchBytes = 1_048_588  // max.message.bytes default: the KIP-74 batch past the cap
)

// fillTopic writes about total bytes to partition 0 of topic with acks=1 and batches
// as large as max.message.bytes allows.
func fillTopic(t *testing.T, n *node, topic string, total int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(), kgo.ProducerBatchMaxBytes(1_000_000),
		kgo.ProducerLinger(50*time.Millisecond), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	// No fsync per batch: the test is about reading, and must take seconds, not minutes.
	never := "never"
	_, err = kadm.NewClient(cl).CreateTopic(ctx(t, 10*time.Second), 1, 1,
		map[string]*string{"log.flush.policy": &never}, topic)
	require.NoError(t, err)
	val := make([]byte, 100_000)
	c := ctx(t, 60*time.Second)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range total / len(val) {
		wg.Add(1)
		cl.Produce(c, &kgo.Record{Topic: topic, Value: val}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if firstErr == nil {
				firstErr = err
			}
		})
	}
	wg.Wait()
	require.NoError(t, firstErr)
}

// A raw Fetch with MaxBytes and PartitionMaxBytes 2^31-1 over a 70 MiB log got the
// whole log in one response; now at most fetch.max.bytes plus one batch.
func TestHostileHugeFetchIsCapped(t *testing.T) {
	n := startNode(t, "")
	start := time.Now()
	fillTopic(t, n, "big", 70<<20)
	t.Logf("70 MiB written in %v", time.Since(start))

	// Generous read bounds: under a load of 18 on two cores, reading the ~55 MiB answer
	// overran kgo's default 10 s request overhead. A bound, not a speed check.
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.BrokerMaxReadBytes(1<<30),
		kgo.RequestTimeoutOverhead(90*time.Second))
	require.NoError(t, err)
	defer cl.Close()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, math.MaxInt32, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "big"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, math.MaxInt32, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)

	for range 2 { // twice: memory must not grow with each such fetch
		resp, err := req.RequestWith(ctx(t, 90*time.Second), cl.Broker(1))
		require.NoError(t, err)
		require.Zero(t, resp.ErrorCode)
		p := resp.Topics[0].Partitions[0]
		require.Zero(t, p.ErrorCode)
		require.Greater(t, p.HighWatermark, int64(600), "the log holds ~70 MiB")
		t.Logf("one fetch returned %.1f MiB", float64(len(p.RecordBatches))/(1<<20))
		require.LessOrEqual(t, len(p.RecordBatches), fetchMaxBytes+maxBatchBytes)
		require.Greater(t, len(p.RecordBatches), fetchMaxBytes-2*maxBatchBytes)
	}
	n.requireServes("probe", 2*time.Second)
	n.requireWithin(600<<20, 200)
}

// A Metadata request naming 3,000 unknown topics with auto-creation on created them
// all at once while other clients timed out. Now one request creates at most
// sluice.auto.create.topics.max.per.request (20) topics and the rest are answered
// LEADER_NOT_AVAILABLE; a normal client keeps being served while storms repeat.
func TestHostileMetadataStormIsBounded(t *testing.T) {
	n := startNode(t, "")
	admin, err := kgo.NewClient(kgo.SeedBrokers(n.addr))
	require.NoError(t, err)
	defer admin.Close()
	_, err = kadm.NewClient(admin).CreateTopic(ctx(t, 10*time.Second), 1, 1, nil, "probe")
	require.NoError(t, err)

	// storm runs on the test goroutine and on the storming one: it reports failures
	// with t.Errorf, never FailNow.
	storm := func(round int) (created, deferred int) {
		req := kmsg.NewPtrMetadataRequest()
		req.AllowAutoTopicCreation = true
		for i := range 3000 {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(fmt.Sprintf("storm-%d-%04d", round, i))
			req.Topics = append(req.Topics, rt)
		}
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := req.RequestWith(c, admin.Broker(1))
		if err != nil || len(resp.Topics) != 3000 {
			t.Errorf("storm round %d: %v", round, err)
			return 0, 0
		}
		for _, mt := range resp.Topics {
			switch mt.ErrorCode {
			case 0:
				created++
			case 5: // LEADER_NOT_AVAILABLE
				deferred++
			default:
				t.Errorf("topic %s: error %d", *mt.Topic, mt.ErrorCode)
			}
		}
		return created, deferred
	}
	start := time.Now()
	created, deferred := storm(0)
	t.Logf("a 3,000-topic storm was answered in %v: %d created, %d deferred",
		time.Since(start), created, deferred)
	require.LessOrEqual(t, created, 20)
	require.Equal(t, 3000, created+deferred)

	// Storms keep coming while a normal client produces and consumes.
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		total := 0
		for round := 1; ; round++ {
			select {
			case <-stop:
				done <- total
				return
			default:
			}
			c, _ := storm(round)
			total += c
		}
	}()
	stopped := false
	stopStorms := func() int {
		if stopped {
			return 0
		}
		stopped = true
		close(stop)
		return <-done
	}
	defer stopStorms() // also when requireServes fails: no storm outlives the test
	for stormStart := time.Now(); time.Since(stormStart) < 2*time.Second; {
		n.requireServes("probe", 2*time.Second)
	}
	total := created + stopStorms()
	elapsed := time.Since(start)
	t.Logf("in %v of storms %d topics were created", elapsed, total)
	// 50 partitions per second (16.7 topics of 3) after a burst of one second's worth,
	// which one topic may overdraw.
	require.LessOrEqual(t, float64(total), 17*elapsed.Seconds()+17+1)
	topics, err := kadm.NewClient(admin).ListTopics(context.Background())
	require.NoError(t, err)
	require.Len(t, topics, 1+total, "only what the answers reported was created")
	n.requireServes("probe-after-the-storm", 2*time.Second) // auto-created

	n.requireWithin(400<<20, 2000)
}
