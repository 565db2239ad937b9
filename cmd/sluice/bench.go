package main

// sluice bench: produce and consume throughput and latency against a running node.
// It prints one FIGURE line per step in the same shape as ../shared/bench/peer_bench.sh
// so the two can be set side by side in docs/benchmarks.md.

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func init() {
	register("bench", command{summary: "measure produce/consume throughput and latency", run: runBench})
}

type benchOpts struct {
	bootstrap  string
	records    int
	size       int
	partitions int
	maxTime    time.Duration
	steps      string
	serverPID  int // when set, each figure reports the CPU seconds that process used
	// replication is the bench topics' replication factor (0: 1); label prefixes the
	// figures' test names (bench cluster: "cluster3_").
	replication int16
	label       string
	tls         clientTLS
	tlsOpts     []kgo.Opt // from tls, once parsed
}

// with is the clients' options: the seeds, TLS when asked, then extra.
func (o benchOpts) with(extra ...kgo.Opt) []kgo.Opt {
	return append(append([]kgo.Opt{seeds(o.bootstrap)}, o.tlsOpts...), extra...)
}

// seeds splits a comma-separated bootstrap list.
func seeds(bootstrap string) kgo.Opt { return kgo.SeedBrokers(strings.Split(bootstrap, ",")...) }

type benchStep struct {
	name      string
	acks      kgo.Acks
	idem      bool
	producers int
	sync      bool // one record at a time: each waits for the previous ack
}

// syncRecords bounds the one-at-a-time steps, like the peers' SYNC_MSGS.
const syncRecords = 20_000

func runBench(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "chart" {
		return runBenchChart(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "cluster" {
		return runBenchCluster(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "compaction" {
		return runBenchCompaction(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "hostile" {
		return runBenchHostile(args[1:], stdout, stderr)
	}
	fs := newFlagSet("bench", "sluice bench [--bootstrap HOST:PORT] [--records N] [--size B] "+
		"[--steps S,...]\n       sluice bench chart --in RESULTS --out FILE.svg\n"+
		"       sluice bench cluster [--nodes N] [--kills K] (sluice bench cluster -h)\n"+
		"       sluice bench compaction --metrics URL (sluice bench compaction -h)\n"+
		"       sluice bench hostile [--conns N] [--time D] (sluice bench hostile -h)", stderr)
	var o benchOpts
	fs.StringVar(&o.bootstrap, "bootstrap", "127.0.0.1:9092", "broker address")
	fs.IntVar(&o.records, "records", 200_000, "records per produce step")
	fs.IntVar(&o.size, "size", 1024, "record value bytes")
	fs.IntVar(&o.partitions, "partitions", 4, "partitions of each bench topic")
	fs.DurationVar(&o.maxTime, "max-time", 60*time.Second, "time bound per step")
	fs.IntVar(&o.serverPID, "server-pid", 0,
		"`PID` of the node, to report its CPU seconds per step (Linux /proc)")
	fs.StringVar(&o.steps, "steps",
		"acks1_p1,acksall_p1,acksall_p4,acksall_idem_p1,consume,sync_acks1,sync_acksall",
		"comma-separated steps: acks1_pN, acksall_pN, acksall_idem_pN, consume, "+
			"sync_acks1, sync_acksall")
	fs.StringVar(&o.label, "label", "", "prefix of the figures' test names, e.g. tls_")
	rf := fs.Int("replication-factor", 1, "replication factor of the bench topics")
	o.tls.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0 // -h: the usage is printed
		}
		return 2
	}
	if o.records <= 0 || o.size <= 0 || o.partitions <= 0 {
		fmt.Fprintln(stderr, "bench: --records, --size and --partitions must be positive")
		return 2
	}
	if *rf < 1 || *rf > 32767 {
		fmt.Fprintln(stderr, "bench: --replication-factor must be between 1 and 32767")
		return 2
	}
	o.replication = int16(*rf)
	var err error
	if o.tlsOpts, err = o.tls.opts(); err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 2
	}
	return runUntilSignal("bench", stderr, func(ctx context.Context) error {
		return benchRun(ctx, o, stdout)
	})
}

// runUntilSignal runs f with a context that Ctrl-C or SIGTERM ends, and turns its
// error into exit status 1, printed after name.
func runUntilSignal(name string, stderr io.Writer, f func(context.Context) error) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := f(ctx); err != nil {
		fmt.Fprintln(stderr, name+":", err)
		return 1
	}
	return 0
}

// benchRun runs the steps until ctx ends (Ctrl-C), and deletes the topics it created
// in any case.
func benchRun(ctx context.Context, o benchOpts, out io.Writer) (err error) {
	var created []string
	defer func() {
		if derr := benchDeleteTopics(o, created); derr != nil && err == nil {
			err = derr
		}
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("interrupted (bench topics deleted): %w", err)
		}
	}()
	lastTopic, lastAcked := "", 0
	for _, s := range strings.Split(o.steps, ",") {
		s = strings.TrimSpace(s)
		cpu0 := serverCPU(o.serverPID)
		pw := &cpuWriter{w: out, pid: o.serverPID, start: cpu0}
		out := io.Writer(pw)
		if s == "consume" {
			if lastTopic == "" {
				return fmt.Errorf("consume needs a produce step before it")
			}
			if err := benchConsume(ctx, o, lastTopic, lastAcked, out); err != nil {
				return err
			}
			continue
		}
		st, err := parseStep(s)
		if err != nil {
			return err
		}
		topic := fmt.Sprintf("bench-%s-%d", st.name, time.Now().UnixNano())
		if err := benchCreateTopic(ctx, o, topic); err != nil {
			return err
		}
		created = append(created, topic)
		acked, err := benchProduce(ctx, o, st, topic, out)
		if err != nil {
			return err
		}
		lastTopic, lastAcked = topic, acked
	}
	return ctx.Err() // a step cut short by Ctrl-C still prints its figures
}

func parseStep(s string) (benchStep, error) {
	st := benchStep{name: s, producers: 1}
	var n int
	switch {
	case s == "sync_acks1":
		st.acks, st.sync = kgo.LeaderAck(), true
		return st, nil
	case s == "sync_acksall":
		st.acks, st.sync, st.idem = kgo.AllISRAcks(), true, true
		return st, nil
	case strings.HasPrefix(s, "acks1_p"):
		_, err := fmt.Sscanf(s, "acks1_p%d", &n)
		st.acks, st.producers = kgo.LeaderAck(), n
		return st, stepErr(s, err, n)
	case strings.HasPrefix(s, "acksall_idem_p"):
		_, err := fmt.Sscanf(s, "acksall_idem_p%d", &n)
		st.acks, st.idem, st.producers = kgo.AllISRAcks(), true, n
		return st, stepErr(s, err, n)
	case strings.HasPrefix(s, "acksall_p"):
		_, err := fmt.Sscanf(s, "acksall_p%d", &n)
		st.acks, st.producers = kgo.AllISRAcks(), n
		return st, stepErr(s, err, n)
	}
	return st, fmt.Errorf("unknown step %q", s)
}

func stepErr(s string, err error, n int) error {
	if err != nil || n < 1 || n > 64 {
		return fmt.Errorf("step %q: want a producer count between 1 and 64", s)
	}
	return nil
}

func benchCreateTopic(ctx context.Context, o benchOpts, topic string) error {
	cl, err := kgo.NewClient(o.with()...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, int32(o.partitions), max(o.replication, 1), nil, topic)
	if err != nil {
		return fmt.Errorf("create topic %s: %w (is a node running at %s?)", topic, err, o.bootstrap)
	}
	if resp.Err != nil {
		return resp.Err
	}
	return benchAwaitTopic(ctx, adm, topic, o.partitions, int(max(o.replication, 1)))
}

// benchAwaitTopic waits (within ctx) until every partition of topic has a leader and
// its whole replica set in sync, so that a step times the produce, not the topic's
// start. In a cluster CreateTopics is answered once the topic is in the metadata log,
// before the brokers have taken up their parts: producing at once met
// NOT_LEADER_OR_FOLLOWER and the client's metadata backoff, which made up a second of a
// three-second step and its p99 (docs/benchmarks.md, 2026-12-04 session 17).
func benchAwaitTopic(ctx context.Context, adm *kadm.Client, topic string, partitions,
	replication int) error {
	for {
		if benchTopicReady(ctx, adm, topic, partitions, replication) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s: its partitions did not all get a leader and a "+
				"full ISR: %w", topic, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func benchTopicReady(ctx context.Context, adm *kadm.Client, topic string, partitions,
	replication int) bool {
	tds, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return false
	}
	td, ok := tds[topic]
	if !ok || td.Err != nil || len(td.Partitions) != partitions {
		return false
	}
	for _, p := range td.Partitions {
		if p.Err != nil || p.Leader < 0 || len(p.ISR) < replication {
			return false
		}
	}
	return true
}

// benchDeleteTopics deletes the bench's topics, with a bound of its own so that it
// runs after an interrupt too.
func benchDeleteTopics(o benchOpts, topics []string) error {
	if len(topics) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(o.with()...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resps, err := kadm.NewClient(cl).DeleteTopics(ctx, topics...)
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		return fmt.Errorf("delete bench topics %s: %w", strings.Join(topics, ", "), err)
	}
	return nil
}

// benchProduce runs st.producers clients in parallel, each producing its share of the
// records asynchronously, and reports throughput and per-record ack latency.
func benchProduce(ctx context.Context, o benchOpts, st benchStep, topic string,
	out io.Writer) (int, error) {
	value := make([]byte, o.size)
	_, _ = rand.Read(value) // incompressible, like the peers' payloads
	if st.sync {
		return benchProduceSync(ctx, o, st, topic, value, out)
	}
	per := o.records / st.producers
	lat := make([][]time.Duration, st.producers)
	var failed atomic.Int64
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(ctx, o.maxTime)
	defer cancel()
	start := time.Now()
	for p := 0; p < st.producers; p++ {
		opts := o.with(kgo.DefaultProduceTopic(topic),
			kgo.RequiredAcks(st.acks), kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.MaxBufferedRecords(10_000), kgo.ProducerLinger(0))
		if !st.idem {
			opts = append(opts, kgo.DisableIdempotentWrite())
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return 0, err
		}
		defer cl.Close()
		lat[p] = make([]time.Duration, 0, min(per, 1<<20))
		wg.Add(1)
		go func(p int, cl *kgo.Client) {
			defer wg.Done()
			var mu sync.Mutex
			for i := 0; i < per && ctx.Err() == nil; i++ {
				t0 := time.Now()
				cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
					if err != nil {
						failed.Add(1)
						return
					}
					d := time.Since(t0)
					mu.Lock()
					lat[p] = append(lat[p], d)
					mu.Unlock()
				})
			}
			_ = cl.Flush(ctx)
		}(p, cl)
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(lat...)
	if len(all) == 0 {
		return 0, fmt.Errorf("step %s: no record was acknowledged (%d failed)", st.name,
			failed.Load())
	}
	printProduce(out, o.label+st.name, o.size, all, elapsed, failed.Load())
	return len(all), nil
}

func printProduce(out io.Writer, name string, size int, lat []time.Duration,
	elapsed time.Duration, failed int64) {
	slices.Sort(lat)
	rate := float64(len(lat)) / elapsed.Seconds()
	fmt.Fprintf(out, "FIGURE system=sluice test=produce_%s msgs_per_s=%.0f MiB_per_s=%.1f "+
		"ack_latency(P50:%s P99:%s) acked=%d failed=%d\n", name, rate,
		rate*float64(size)/(1<<20), lat[len(lat)/2].Round(time.Microsecond),
		lat[len(lat)*99/100].Round(time.Microsecond), len(lat), failed)
}

// benchProduceSync produces one record at a time, each waiting for its ack: the
// latency of a single round trip including, for acks=all, the fsync.
func benchProduceSync(ctx context.Context, o benchOpts, st benchStep, topic string,
	value []byte, out io.Writer) (int, error) {
	opts := o.with(kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(st.acks), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(0))
	if !st.idem {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, o.maxTime)
	defer cancel()
	n := min(o.records, syncRecords)
	lat := make([]time.Duration, 0, n)
	start := time.Now()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		t0 := time.Now()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			return 0, fmt.Errorf("step %s: %w", st.name, err)
		}
		lat = append(lat, time.Since(t0))
	}
	printProduce(out, o.label+st.name, o.size, lat, time.Since(start), 0)
	return len(lat), nil
}

// benchConsume reads the given topic from the beginning to its end.
func benchConsume(ctx context.Context, o benchOpts, topic string, want int,
	out io.Writer) error {
	cl, err := kgo.NewClient(o.with(kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(32<<20))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, o.maxTime)
	defer cancel()
	got, bytes := 0, 0
	start := time.Now()
	for got < want && ctx.Err() == nil {
		fetches := cl.PollFetches(ctx)
		fetches.EachRecord(func(r *kgo.Record) {
			got++
			bytes += len(r.Value)
		})
	}
	el := time.Since(start).Seconds()
	fmt.Fprintf(out, "FIGURE system=sluice test=%sconsume msgs_per_s=%.0f MiB_per_s=%.1f "+
		"records=%d\n", o.label, float64(got)/el, float64(bytes)/el/(1<<20), got)
	if got < want {
		return fmt.Errorf("consume read %d of %d records before the time bound", got, want)
	}
	return nil
}

// cpuWriter appends the server's CPU seconds since start to every FIGURE line.
type cpuWriter struct {
	w     io.Writer
	pid   int
	start float64
}

func (c *cpuWriter) Write(p []byte) (int, error) {
	line := string(p)
	if c.pid > 0 && strings.HasPrefix(line, "FIGURE ") && strings.HasSuffix(line, "\n") {
		line = strings.TrimSuffix(line, "\n") +
			fmt.Sprintf(" server_cpu_s=%.2f\n", serverCPU(c.pid)-c.start)
	}
	if _, err := io.WriteString(c.w, line); err != nil {
		return 0, err
	}
	return len(p), nil
}

// serverCPU returns user+system CPU seconds of pid from /proc (0 when unknown).
func serverCPU(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	rest := string(b)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clockTicks
}

// clockTicks is USER_HZ, 100 on every Linux platform Go supports.
const clockTicks = 100
