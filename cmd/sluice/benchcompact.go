package main

// sluice bench compaction: what the log cleaner does to a node. It fills a compacted
// topic with keyed records while the cleaner is held off (min.cleanable.dirty.ratio=1,
// which a dirty share can never be past), runs steady acks=1 and acks=all producers to
// a topic of its own, and after an idle window releases the cleaner (ratio 0.01). From
// the node's cleaner metrics it reports MB/s cleaned, and the producers' p50/p99 with
// the cleaner idle and while it was busy, from the same run (docs/benchmarks.md).

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type compactOpts struct {
	bootstrap    string
	metrics      string // the node's /metrics URL
	fillBytes    int64  // value bytes written to the compacted topic
	keys         int
	size         int
	segmentBytes int
	rate         int // records per second of each steady producer
	idle         time.Duration
	maxTime      time.Duration
	serverPID    int
}

// compactWarmup is left out of the idle window: the steady producers' first records
// pay for their connections and metadata.
const compactWarmup = time.Second

func runBenchCompaction(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench compaction", "sluice bench compaction --metrics URL "+
		"[--bootstrap HOST:PORT] [--fill-mib N] [--keys N]", stderr)
	var o compactOpts
	fs.StringVar(&o.bootstrap, "bootstrap", "127.0.0.1:9092", "broker address")
	fs.StringVar(&o.metrics, "metrics", "", "`URL` of the node's metrics, "+
		"e.g. http://127.0.0.1:9644/metrics (sluice node --http-listen)")
	fillMiB := fs.Int("fill-mib", 512, "MiB of record values written to the compacted topic")
	fs.IntVar(&o.keys, "keys", 1000, "distinct keys: all but the last record of each go")
	fs.IntVar(&o.size, "size", 1024, "record value bytes")
	fs.IntVar(&o.segmentBytes, "segment-bytes", 8<<20, "segment.bytes of the compacted topic")
	fs.IntVar(&o.rate, "rate", 500, "records per second of each steady producer")
	fs.DurationVar(&o.idle, "idle", 5*time.Second, "window measured with the cleaner idle")
	fs.DurationVar(&o.maxTime, "max-time", 3*time.Minute, "time bound of the whole run")
	fs.IntVar(&o.serverPID, "server-pid", 0,
		"`PID` of the node, to report its CPU seconds (Linux /proc)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	o.fillBytes = int64(*fillMiB) << 20
	if o.metrics == "" || o.fillBytes <= 0 || o.keys <= 0 || o.size <= 0 || o.rate <= 0 ||
		o.segmentBytes < 1024 || o.idle <= 0 {
		fmt.Fprintln(stderr, "bench compaction: want --metrics URL, positive --fill-mib, "+
			"--keys, --size, --rate and --idle, and --segment-bytes of at least 1024")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := &cpuWriter{w: stdout, pid: o.serverPID, start: serverCPU(o.serverPID)}
	if err := benchCompaction(ctx, o, out); err != nil {
		fmt.Fprintln(stderr, "bench compaction:", err)
		return 1
	}
	return 0
}

// benchCompaction runs the whole benchmark within o.maxTime and deletes its topics in
// any case.
func benchCompaction(ctx context.Context, o compactOpts, out io.Writer) (err error) {
	bo := benchOpts{bootstrap: o.bootstrap, partitions: 1}
	stamp := time.Now().UnixNano()
	compacted := fmt.Sprintf("bench-compact-%d", stamp)
	probe := fmt.Sprintf("bench-compact-probe-%d", stamp)
	var created []string
	defer func() {
		if derr := benchDeleteTopics(bo, created); derr != nil && err == nil {
			err = derr
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, o.maxTime)
	defer cancel()
	cl, err := kgo.NewClient(bo.with()...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	held := map[string]*string{"cleanup.policy": strPtr("compact"),
		"segment.bytes": strPtr(fmt.Sprint(o.segmentBytes)), "min.compaction.lag.ms": strPtr("0"),
		"min.cleanable.dirty.ratio": strPtr("1")}
	for _, t := range []struct {
		name    string
		configs map[string]*string
	}{{compacted, held}, {probe, nil}} {
		if err := compactCreate(ctx, adm, t.name, t.configs); err != nil {
			return err
		}
		created = append(created, t.name)
	}
	if err := compactFill(ctx, o, compacted, out); err != nil {
		return err
	}
	return compactMeasure(ctx, o, adm, compacted, probe, out)
}

func compactCreate(ctx context.Context, adm *kadm.Client, topic string,
	configs map[string]*string) error {
	resp, err := adm.CreateTopic(ctx, 1, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return benchAwaitTopic(ctx, adm, topic, 1, 1)
}

// compactFill writes o.fillBytes of values over o.keys keys, acks=1, and reports it.
func compactFill(ctx context.Context, o compactOpts, topic string, out io.Writer) error {
	cl, err := kgo.NewClient(seeds(o.bootstrap), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(10_000))
	if err != nil {
		return err
	}
	defer cl.Close()
	value := make([]byte, o.size)
	_, _ = rand.Read(value)
	n := int(o.fillBytes / int64(o.size))
	var failed atomic.Pointer[error]
	start := time.Now()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		r := &kgo.Record{Key: []byte(fmt.Sprintf("key-%07d", i%o.keys)), Value: value}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("fill %s: %w", topic, err)
	}
	if err := failed.Load(); err != nil {
		return fmt.Errorf("fill %s: %w", topic, *err)
	}
	el := time.Since(start).Seconds()
	fmt.Fprintf(out, "FIGURE system=sluice test=compaction_fill msgs_per_s=%.0f "+
		"MiB_per_s=%.1f records=%d keys=%d segment_bytes=%d\n", float64(n)/el,
		float64(n*o.size)/el/(1<<20), n, o.keys, o.segmentBytes)
	return nil
}
