package runtime

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicemq/sluice/core/replica"
)

// cleanerMetrics are the log cleaner's series (docs/operations.md, "Metrics"): what it
// read and rewrote and how long it worked, so that an operator (and `sluice bench
// compaction`) can tell its throughput and whether it keeps up.
type cleanerMetrics struct {
	cleans  prometheus.Counter // sluice_log_cleaner_cleans_total
	read    prometheus.Counter // sluice_log_cleaner_read_bytes_total
	cleaned prometheus.Counter // sluice_log_cleaner_cleaned_bytes_total
	written prometheus.Counter // sluice_log_cleaner_written_bytes_total
	seconds prometheus.Counter // sluice_log_cleaner_seconds_total
	busy    prometheus.Gauge   // sluice_log_cleaner_busy
}

func newCleanerMetrics() cleanerMetrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	return cleanerMetrics{
		cleans: c("sluice_log_cleaner_cleans_total",
			"Cleans the log cleaner finished, successful or not."),
		read: c("sluice_log_cleaner_read_bytes_total",
			"Segment bytes the cleaner read: the key-map pass and the rewrite each "+
				"read the dirty segments."),
		cleaned: c("sluice_log_cleaner_cleaned_bytes_total",
			"Size of the segments the cleaner rewrote and swapped in, before the clean."),
		written: c("sluice_log_cleaner_written_bytes_total",
			"Size of those segments after the clean."),
		seconds: c("sluice_log_cleaner_seconds_total",
			"Time the cleaner spent cleaning, log.cleaner.io.max.bytes.per.second waits "+
				"included."),
		busy: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_log_cleaner_busy",
			Help: "1 while a clean runs, else 0."}),
	}
}

func (m cleanerMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.cleans, m.read, m.cleaned, m.written, m.seconds, m.busy}
}

// done records one clean that took d; res holds what it did, also when it failed part
// way (the segments swapped in before the failure stay).
func (m cleanerMetrics) done(res replica.CleanResult, d time.Duration) {
	m.cleans.Inc()
	m.read.Add(float64(res.BytesRead))
	m.cleaned.Add(float64(res.BytesBefore))
	m.written.Add(float64(res.BytesAfter))
	m.seconds.Add(d.Seconds())
	m.busy.Set(0)
}
