package runtime_test

import (
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// One-at-a-time producers are stepped on their connection readers when the node is
// idle, pipelined ones through the event loop. Mixed on one partition, every
// acknowledged record gets its own offset, offsets leave no gap, each producer's
// offsets grow in the order it sent, and acks=all answers still wait for their fsync.
func TestNodeOneAtATimeAndPipelinedProducersShareAPartition(t *testing.T) {
	n := startNode(t, "")
	admin := newClient(t, n)
	createTopic(t, admin, "mixed", 1)
	ctx := testCtx(t, 60*time.Second)

	const perSync, pipelined = 150, 600
	var mu sync.Mutex
	var all []int64
	var wg sync.WaitGroup
	for i := range 4 {
		opts := []kgo.Opt{kgo.DefaultProduceTopic("mixed"), kgo.ProducerLinger(0)}
		if i%2 == 0 {
			opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
		}
		cl := newClient(t, n, opts...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := int64(-1)
			for range perSync {
				r, err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("one")}).First()
				if !assertNoErr(t, err) {
					return
				}
				if r.Offset <= last {
					t.Errorf("offset %d after %d on one connection", r.Offset, last)
				}
				last = r.Offset
				mu.Lock()
				all = append(all, r.Offset)
				mu.Unlock()
			}
		}()
	}
	cl := newClient(t, n, kgo.DefaultProduceTopic("mixed"))
	wg.Add(1)
	go func() {
		defer wg.Done()
		var pwg sync.WaitGroup
		for range pipelined {
			pwg.Add(1)
			cl.Produce(ctx, &kgo.Record{Value: []byte("many")}, func(r *kgo.Record, err error) {
				defer pwg.Done()
				if assertNoErr(t, err) {
					mu.Lock()
					all = append(all, r.Offset)
					mu.Unlock()
				}
			})
		}
		pwg.Wait()
	}()
	wg.Wait()

	require.Len(t, all, 4*perSync+pipelined)
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	for i, off := range all {
		require.Equal(t, int64(i), off, "offsets are unique and leave no gap")
	}
}

func assertNoErr(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Errorf("produce: %v", err)
		return false
	}
	return true
}
