package runtime_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap/zaptest"

	"github.com/sluicemq/sluice/runtime"
)

// Close under one-at-a-time producers, pipelined producers and a consumer (the readers
// stepping inline and the loop both active) returns cleanly, three times over.
func TestNodeCloseDuringTraffic(t *testing.T) {
	for iter := 0; iter < 3; iter++ {
		n := runtime.NewNode(runtime.Options{ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(),
			Logger: zaptest.NewLogger(t), DrainTimeout: 300 * time.Millisecond})
		require.NoError(t, n.Start(context.Background()))
		admin := newClient(t, n)
		createTopic(t, admin, "x", 2)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for i := range 6 {
			opts := []kgo.Opt{kgo.DefaultProduceTopic("x"), kgo.ProducerLinger(0), kgo.RetryTimeout(time.Second), kgo.DisableIdempotentWrite(), kgo.RecordDeliveryTimeout(2 * time.Second)}
			if i%2 == 0 {
				opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
			}
			cl := newClient(t, n, opts...)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					_, _ = cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).First()
				}
			}()
		}
		cons := newClient(t, n, kgo.ConsumeTopics("x"), kgo.FetchMaxWait(50*time.Millisecond))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				cons.PollFetches(ctx)
			}
		}()
		time.Sleep(700 * time.Millisecond)
		require.NoError(t, n.Close())
		cancel()
		wg.Wait()
	}
}
