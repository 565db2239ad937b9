package console

import (
	"math"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
)

// nodeMetrics is what the console reads from the node's Prometheus registry: facts of
// this node that Kafka's protocol does not carry. Every field may be empty: a series the
// node does not export is shown as unknown.
type nodeMetrics struct {
	fams map[string]*dto.MetricFamily
}

func (c *Console) gather() nodeMetrics {
	m := nodeMetrics{fams: map[string]*dto.MetricFamily{}}
	if c.opts.Gatherer == nil {
		return m
	}
	fams, err := c.opts.Gatherer.Gather()
	if err != nil {
		c.lg.Debug("console: gathering the node's metrics", zap.Error(err))
	}
	for _, f := range fams {
		m.fams[f.GetName()] = f
	}
	return m
}

// gauge is the value of an unlabelled gauge or counter.
func (m nodeMetrics) gauge(name string) (float64, bool) {
	f, ok := m.fams[name]
	if !ok || len(f.Metric) == 0 {
		return 0, false
	}
	return value(f.Metric[0]), true
}

// value is a series' value; NaN and infinities, which JSON cannot carry, read as 0.
func value(mt *dto.Metric) float64 {
	v := rawValue(mt)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

func rawValue(mt *dto.Metric) float64 {
	switch {
	case mt.Gauge != nil:
		return mt.Gauge.GetValue()
	case mt.Counter != nil:
		return mt.Counter.GetValue()
	case mt.Untyped != nil:
		return mt.Untyped.GetValue()
	}
	return 0
}

// quorum lists the node's sluice_quorum_* and sluice_controller_* series (name without
// prefix, labels, value), whatever they are: the console shows them as they come.
func (m nodeMetrics) quorum() []namedValue {
	var out []namedValue
	for name, f := range m.fams {
		short, ok := strings.CutPrefix(name, "sluice_quorum_")
		if !ok {
			short, ok = strings.CutPrefix(name, "sluice_controller_")
			if ok {
				short = "controller_" + short
			}
		}
		if !ok || f.GetType() == dto.MetricType_HISTOGRAM ||
			f.GetType() == dto.MetricType_SUMMARY {
			continue
		}
		for i, mt := range f.Metric {
			if i >= 20 {
				break
			}
			out = append(out, namedValue{Name: short + labelString(mt), Value: value(mt)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

type namedValue struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

func labelString(mt *dto.Metric) string {
	if len(mt.Label) == 0 {
		return ""
	}
	parts := make([]string, 0, len(mt.Label))
	for _, l := range mt.Label {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// partitionSizes is the size on disk of each partition this node hosts, from the first
// sluice_partition_*_bytes gauge labelled by topic and partition.
func (m nodeMetrics) partitionSizes(topic string) map[int32]int64 {
	names := make([]string, 0, 2)
	for name := range m.fams {
		if strings.HasPrefix(name, "sluice_partition_") && strings.HasSuffix(name, "_bytes") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		out := map[int32]int64{}
		for _, mt := range m.fams[name].Metric {
			t, p := labels(mt)
			if t != topic {
				continue
			}
			if pi, err := strconv.ParseInt(p, 10, 32); err == nil {
				out[int32(pi)] = int64(value(mt))
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

func labels(mt *dto.Metric) (topic, partition string) {
	for _, l := range mt.Label {
		switch l.GetName() {
		case "topic":
			topic = l.GetValue()
		case "partition":
			partition = l.GetValue()
		}
	}
	return topic, partition
}

// histogram is one latency histogram summed over its labels: cumulative counts by
// upper bound, for the browser to take p99 of the difference between two polls.
type histogram struct {
	Name   string    `json:"name"`
	Bounds []float64 `json:"bounds"`
	Counts []uint64  `json:"counts"`
	Count  uint64    `json:"count"`
}

const maxHistograms = 12

// histograms are the node's sluice_*_seconds histograms, at most maxHistograms.
func (m nodeMetrics) histograms() []histogram {
	var out []histogram
	for name, f := range m.fams {
		if f.GetType() != dto.MetricType_HISTOGRAM || !strings.HasPrefix(name, "sluice_") ||
			!strings.HasSuffix(name, "_seconds") {
			continue
		}
		h := histogram{Name: name}
		for _, mt := range f.Metric {
			hg := mt.GetHistogram()
			if hg == nil {
				continue
			}
			if h.Bounds == nil {
				for _, b := range hg.Bucket {
					if math.IsInf(b.GetUpperBound(), 0) {
						break // the count is the +Inf bucket
					}
					h.Bounds = append(h.Bounds, b.GetUpperBound())
				}
				h.Counts = make([]uint64, len(h.Bounds))
			}
			if len(hg.Bucket) < len(h.Bounds) {
				continue // labels with other buckets: not summable
			}
			for i := range h.Bounds {
				h.Counts[i] += hg.Bucket[i].GetCumulativeCount()
			}
			h.Count += hg.GetSampleCount()
		}
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if len(out) > maxHistograms {
		out = out[:maxHistograms]
	}
	return out
}
