package runtime_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	stdnet "net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/batch"
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

// BenchmarkNodeProduceOneAtATimeRaw measures the node's round trip for one 1 KiB acks=1
// produce at a time over a raw socket (no client library, whose goroutine hand-offs
// would dominate): ns/op is the mean round trip, p50-µs its median. The client runs in
// the test's process, sharing its scheduler; docs/benchmarks.md's raw-probe figures
// come from the same loop in a separate process against `sluice node`.
func BenchmarkNodeProduceOneAtATimeRaw(b *testing.B) {
	n := startNodeB(b)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr()))
	require.NoError(b, err)
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopics(b.Context(), 1, 1, nil, "raw")
	require.NoError(b, err)
	require.NoError(b, resp["raw"].Err)
	nc, err := stdnet.DialTimeout("tcp", n.Addr(), 2*time.Second)
	require.NoError(b, err)
	defer nc.Close()
	br := bufio.NewReader(nc)
	value := bytes.Repeat([]byte("x"), 1024)
	lat := make([]time.Duration, 0, b.N)
	var size [4]byte
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(7)
		req.Acks, req.TimeoutMillis = 1, 10_000
		p := kmsg.NewProduceRequestTopicPartition()
		p.Records = batch.Build([]batch.KV{{Value: value}}, batch.NoProducer, time.Now().UnixMilli())
		t := kmsg.NewProduceRequestTopic()
		t.Topic, t.Partitions = "raw", []kmsg.ProduceRequestTopicPartition{p}
		req.Topics = []kmsg.ProduceRequestTopic{t}
		f := frame(int32(i), req)
		t0 := time.Now()
		_, err := nc.Write(f)
		require.NoError(b, err)
		_, err = io.ReadFull(br, size[:])
		require.NoError(b, err)
		_, err = br.Discard(int(binary.BigEndian.Uint32(size[:])))
		require.NoError(b, err)
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
}
