package console

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// What the console reads from the node's registry, whatever the exact series names the
// node exports: a per-partition size gauge, quorum series, and latency histograms
// summed over their labels.
func TestNodeMetricsReadsWhatTheNodeExports(t *testing.T) {
	reg := prometheus.NewRegistry()
	size := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_partition_size_bytes",
		Help: "h"}, []string{"topic", "partition"})
	size.WithLabelValues("orders", "0").Set(4096)
	size.WithLabelValues("orders", "2").Set(10)
	size.WithLabelValues("other", "0").Set(1)
	term := prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_quorum_term", Help: "h"})
	term.Set(7)
	lat := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "sluice_produce_duration_seconds", Help: "h", Buckets: []float64{0.01, 0.1}},
		[]string{"stage"})
	lat.WithLabelValues("append").Observe(0.005)
	lat.WithLabelValues("fsync").Observe(0.05)
	lat.WithLabelValues("fsync").Observe(5)
	other := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "go_thing_seconds",
		Help: "h"})
	reg.MustRegister(size, term, lat, other)

	c := &Console{opts: Options{Gatherer: reg}, lg: zap.NewNop()}
	m := c.gather()
	require.Equal(t, map[int32]int64{0: 4096, 2: 10}, m.partitionSizes("orders"))
	require.Nil(t, m.partitionSizes("missing"))
	require.Equal(t, []namedValue{{Name: "term", Value: 7}}, m.quorum())
	hs := m.histograms()
	require.Len(t, hs, 1)
	require.Equal(t, "sluice_produce_duration_seconds", hs[0].Name)
	require.Equal(t, []float64{0.01, 0.1}, hs[0].Bounds)
	require.Equal(t, []uint64{1, 2}, hs[0].Counts)
	require.Equal(t, uint64(3), hs[0].Count)

	empty := (&Console{lg: zap.NewNop()}).gather()
	require.Nil(t, empty.partitionSizes("orders"))
	require.Empty(t, empty.histograms())
}
