package runtime_test

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkNodeProduce measures acks=all produce of 1 KiB records through the whole
// in-process node: wire server, event loop, log and fsync.
func BenchmarkNodeProduce(b *testing.B) {
	n := startNodeB(b)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr()), kgo.ProducerLinger(time.Millisecond),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	require.NoError(b, err)
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopics(b.Context(), 3, 1, nil, "bench")
	require.NoError(b, err)
	require.NoError(b, resp["bench"].Err)
	value := bytes.Repeat([]byte("x"), 1024)
	b.SetBytes(int64(len(value)))
	b.ResetTimer()
	var wg sync.WaitGroup
	wg.Add(b.N)
	for i := 0; i < b.N; i++ {
		cl.Produce(b.Context(), &kgo.Record{Topic: "bench", Value: value},
			func(_ *kgo.Record, err error) {
				if err != nil {
					b.Error(err)
				}
				wg.Done()
			})
	}
	wg.Wait()
}
