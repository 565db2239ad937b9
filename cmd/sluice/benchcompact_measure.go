package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// compactMeasure runs the steady producers, the idle window, then the clean, and prints
// the clean's figure and each producer's in both windows.
func compactMeasure(ctx context.Context, o compactOpts, adm *kadm.Client, compacted,
	probe string, out io.Writer) error {
	before, err := scrapeCleaner(ctx, o.metrics, compacted)
	if err != nil {
		return err
	}
	if before.busy != 0 {
		return fmt.Errorf("the cleaner is already busy (another compacted topic?)")
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	pctx, stopProducers := context.WithCancel(ctx)
	defer stopProducers()
	producers := []*steadyProducer{{name: "acks1", acks: kgo.LeaderAck()},
		{name: "acksall", acks: kgo.AllISRAcks()}}
	for _, p := range producers {
		if err := p.start(pctx, o, probe, &wg); err != nil {
			return err
		}
	}
	began := time.Now()
	if err := awaitIdle(ctx, o.metrics, compacted, before, compactWarmup+o.idle); err != nil {
		return err
	}
	idle := window{from: began.Add(compactWarmup), to: time.Now()}
	resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig,
		Name: "min.cleanable.dirty.ratio", Value: strPtr("0.01")}}, compacted)
	for _, r := range resps {
		if err == nil && r.Err != nil {
			err = fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
		}
	}
	if err != nil {
		return fmt.Errorf("release the cleaner: %w", err)
	}
	busy, after, err := awaitClean(ctx, o.metrics, compacted, before)
	stopProducers()
	wg.Wait() // the producers' last records are answered
	if err != nil {
		return err
	}
	printClean(out, before, after, busy.to.Sub(idle.to))
	for _, p := range producers {
		p.print(out, o.size, "idle", idle)
		p.print(out, o.size, "busy", busy)
	}
	return nil
}

func strPtr(s string) *string { return &s }

// window is a span of send times.
type window struct{ from, to time.Time }

func (w window) has(t time.Time) bool { return !t.Before(w.from) && t.Before(w.to) }

// cleanerPoll is how often the bench reads the node's metrics, in both windows alike
// so that the scrapes weigh the same on the producers' latencies.
const cleanerPoll = 50 * time.Millisecond

// awaitIdle polls the cleaner's metrics for d and fails if it cleaned meanwhile: the
// idle window must be idle.
func awaitIdle(ctx context.Context, url, topic string, before cleanerSample,
	d time.Duration) error {
	tick := time.NewTicker(cleanerPoll)
	defer tick.Stop()
	for end := time.Now().Add(d); time.Now().Before(end); {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		s, err := scrapeCleaner(ctx, url, topic)
		if err != nil {
			return err
		}
		if s.busy != 0 || s.cleans != before.cleans {
			return fmt.Errorf("the cleaner ran in the idle window (another compacted topic?)")
		}
	}
	return nil
}

// awaitClean polls the cleaner's metrics until a clean has finished, and returns the
// span it was busy (ending at the poll that saw it done, as long as the node says it
// cleaned) and the metrics then.
func awaitClean(ctx context.Context, url, topic string, before cleanerSample) (window,
	cleanerSample, error) {
	tick := time.NewTicker(cleanerPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return window{}, cleanerSample{}, fmt.Errorf("no clean finished in time "+
				"(log.cleaner.backoff.ms?): %w", ctx.Err())
		case <-tick.C:
		}
		s, err := scrapeCleaner(ctx, url, topic)
		if err != nil {
			return window{}, s, err
		}
		if s.cleans > before.cleans && s.busy == 0 {
			end := time.Now().Add(-cleanerPoll / 2) // it ended since the last poll

			took := time.Duration((s.seconds - before.seconds) * float64(time.Second))
			return window{from: end.Add(-took), to: end}, s, nil
		}
	}
}

func printClean(out io.Writer, b, a cleanerSample, wall time.Duration) {
	const mb, mib = 1e6, 1 << 20
	secs := a.seconds - b.seconds
	if secs <= 0 || a.cleaned <= b.cleaned {
		fmt.Fprintf(out, "FIGURE system=sluice test=compaction_clean ERROR the clean "+
			"rewrote nothing (%.0f cleans, %.3f s)\n", a.cleans-b.cleans, secs)
		return
	}
	cleaned, read := a.cleaned-b.cleaned, a.read-b.read
	fmt.Fprintf(out, "FIGURE system=sluice test=compaction_clean cleaned_MB_per_s=%.1f "+
		"read_MB_per_s=%.1f cleaned_MiB=%.1f read_MiB=%.1f written_MiB=%.2f clean_s=%.2f "+
		"cleans=%.0f size_before_MiB=%.1f size_after_MiB=%.1f release_to_done_s=%.2f\n",
		cleaned/mb/secs, read/mb/secs, cleaned/mib, read/mib, (a.written-b.written)/mib,
		secs, a.cleans-b.cleans, b.size/mib, a.size/mib, wall.Seconds())
}

// cleanerSample is one scrape of the cleaner's series and the compacted partition's
// size on disk.
type cleanerSample struct {
	cleans, read, cleaned, written, seconds, busy, size float64
}

// scrapeMetrics reads a node's /metrics (url) within 5 s.
func scrapeMetrics(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics: %s from %s", resp.Status, url)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return fams, nil
}

func scrapeCleaner(ctx context.Context, url, topic string) (cleanerSample, error) {
	fams, err := scrapeMetrics(ctx, url)
	if err != nil {
		return cleanerSample{}, err
	}
	one := func(name string) (float64, error) {
		f, ok := fams[name]
		if !ok || len(f.Metric) != 1 {
			return 0, fmt.Errorf("metrics: no %s at %s (a node without cleaner metrics?)",
				name, url)
		}
		m := f.Metric[0]
		if m.Counter != nil {
			return m.Counter.GetValue(), nil
		}
		return m.Gauge.GetValue(), nil
	}
	var s cleanerSample
	for _, f := range []struct {
		name string
		v    *float64
	}{{"sluice_log_cleaner_cleans_total", &s.cleans},
		{"sluice_log_cleaner_read_bytes_total", &s.read},
		{"sluice_log_cleaner_cleaned_bytes_total", &s.cleaned},
		{"sluice_log_cleaner_written_bytes_total", &s.written},
		{"sluice_log_cleaner_seconds_total", &s.seconds},
		{"sluice_log_cleaner_busy", &s.busy}} {
		if *f.v, err = one(f.name); err != nil {
			return s, err
		}
	}
	for _, m := range fams["sluice_partition_size_bytes"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "topic" && l.GetValue() == topic {
				s.size += m.GetGauge().GetValue()
			}
		}
	}
	return s, nil
}

// steadyProducer sends rate records a second, each on its own (linger 0), and keeps
// every record's send time and ack latency (negative: failed).
type steadyProducer struct {
	name string
	acks kgo.Acks

	mu   sync.Mutex
	sent []time.Time
	lat  []time.Duration
}

// steadyTick is how often a steady producer sends its share of records.
const steadyTick = 10 * time.Millisecond

func (p *steadyProducer) start(ctx context.Context, o compactOpts, topic string,
	wg *sync.WaitGroup) error {
	opts := []kgo.Opt{seeds(o.bootstrap), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(p.acks), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(0)}
	// Not idempotent, like bench's acks1_p1 and acksall_p1.
	opts = append(opts, kgo.DisableIdempotentWrite())
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	value := make([]byte, o.size)
	_, _ = rand.Read(value)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cl.Close()
		p.run(ctx, cl, value, o.rate)
		fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = cl.Flush(fctx)
	}()
	return nil
}

// run sends rate records a second, spread over steadyTick ticks, until ctx ends. The
// records themselves are not tied to ctx, so the last ones sent are answered rather
// than failed when it ends; a full buffer fails a record at once (TryProduce).
func (p *steadyProducer) run(ctx context.Context, cl *kgo.Client, value []byte, rate int) {
	tick := time.NewTicker(steadyTick)
	defer tick.Stop()
	began, due := time.Now(), 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		want := int(time.Since(began).Seconds() * float64(rate))
		for ; due < want; due++ {
			t0 := time.Now()
			cl.TryProduce(context.Background(), &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
				d := time.Since(t0)
				if err != nil {
					d = -1
				}
				p.mu.Lock()
				p.sent, p.lat = append(p.sent, t0), append(p.lat, d)
				p.mu.Unlock()
			})
		}
	}
}

// print reports the records sent within w, in bench's produce figure shape.
func (p *steadyProducer) print(out io.Writer, size int, label string, w window) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var lat []time.Duration
	var failed int64
	for i, t := range p.sent {
		switch {
		case !w.has(t):
		case p.lat[i] < 0:
			failed++
		default:
			lat = append(lat, p.lat[i])
		}
	}
	name := fmt.Sprintf("compaction_%s_%s", label, p.name)
	if len(lat) == 0 {
		fmt.Fprintf(out, "FIGURE system=sluice test=produce_%s ERROR no record acknowledged "+
			"in the %s window (%d failed)\n", name, label, failed)
		return
	}
	printProduce(out, name, size, slices.Clone(lat), w.to.Sub(w.from), failed)
}
