package runtime_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkNodeCreate1000Partitions measures creating one topic of 1,000 partitions
// through the in-process node on the real filesystem (ns/op is one whole creation;
// partitions/s is the rate). With -cpuprofile it shows where the event loop spends the
// time; docs/storage.md records it.
func BenchmarkNodeCreate1000Partitions(b *testing.B) {
	const parts = 1000
	n := startNodeB(b)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr()))
	require.NoError(b, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		resp, err := adm.CreateTopics(b.Context(), parts, 1, nil, "bench-"+string(rune('a'+i%26))+
			time.Now().Format("150405.000000"))
		require.NoError(b, err)
		for _, r := range resp {
			require.NoError(b, r.Err, r.ErrMessage)
		}
	}
	b.ReportMetric(float64(parts*b.N)/time.Since(start).Seconds(), "partitions/s")
}
