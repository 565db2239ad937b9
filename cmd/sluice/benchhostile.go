package main

// `sluice bench hostile`: issue 10's hostile-client figure. A well-behaved producer
// (acks=all, one record at a time) measures its produce latency alone (the baseline),
// then again while 2,000 hostile connections hold the node: idle ones, slow-loris ones
// trickling a frame, and greedy producers ignoring the ThrottleMillis of a client
// quota the bench sets (benchhostile_attack.go). Each phase ends with a consume of
// what the producer wrote. The node is one the bench starts on 127.0.0.1 (with the
// settings below, so that 2,000 connections from one address are accepted) or
// --bootstrap's.

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type hostileOpts struct {
	bootstrap, metrics string
	port, serverPID    int
	data, logFile      string
	settings           keyValues // extra settings of the node the bench starts
	attack             attackOpts
	conns              int
	baseline, hostile  time.Duration
	quota              int64
	size, records      int
	bound              time.Duration // one produce or one consume; longer fails the bench
}

// hostileNodeDefaults are the settings of the node the bench starts, where they differ
// from the node's defaults (docs/limits.md, "Connections and requests").
var hostileNodeDefaults = [][2]string{
	// 1000 by default: the 2,000 connections come from 127.0.0.1.
	{"max.connections.per.ip", "4000"},
	// 30000 by default: cut the slow-loris frames after 5 s so that they are closed
	// and come back several times during a run.
	{"sluice.request.read.timeout.ms", "5000"},
}

func runBenchHostile(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench hostile", "sluice bench hostile [--bootstrap HOST:PORT] "+
		"[--conns N] [--slow N] [--greedy N] [--time D] [--baseline-time D]", stderr)
	var o hostileOpts
	fs.StringVar(&o.bootstrap, "bootstrap", "",
		"a running node's `HOST:PORT` (default: start one on 127.0.0.1 --port)")
	fs.IntVar(&o.port, "port", 19300, "Kafka port of the node the bench starts; "+
		"its /metrics on the next one")
	fs.StringVar(&o.data, "data", "", "folder for that node's data (default: a temporary one)")
	fs.StringVar(&o.logFile, "log", "", "file for that node's log (default: discarded)")
	fs.Var(&o.settings, "setting", "a `KEY=VALUE` line of that node's config file, "+
		"over the bench's own (repeatable)")
	fs.StringVar(&o.metrics, "metrics", "", "`URL` of --bootstrap's /metrics, for the "+
		"node's own counts of refused and closed connections")
	fs.IntVar(&o.serverPID, "server-pid", 0, "`PID` of --bootstrap's node, for its RSS "+
		"and descriptors (Linux /proc)")
	fs.IntVar(&o.conns, "conns", 2000, "hostile connections: idle, slow and greedy")
	fs.IntVar(&o.attack.slow, "slow", 100, "of them, slow-loris clients")
	fs.IntVar(&o.attack.greedy, "greedy", 20, "of them, producers ignoring throttles")
	fs.StringVar(&o.attack.source, "source", "", "local `IP` of the hostile connections "+
		"(e.g. 127.0.0.2, to try max.connections.per.ip; default: any)")
	fs.DurationVar(&o.attack.slowInterval, "slow-interval", time.Second,
		"time between two bytes of a slow-loris frame")
	fs.DurationVar(&o.attack.openBound, "open-time", 60*time.Second,
		"time bound for opening the connections")
	fs.Int64Var(&o.quota, "quota", 100<<10, "producer_byte_rate of the greedy clients' id")
	fs.DurationVar(&o.baseline, "baseline-time", 15*time.Second,
		"how long the well-behaved producer runs alone")
	fs.DurationVar(&o.hostile, "time", 15*time.Second,
		"how long it runs under the attack")
	fs.IntVar(&o.size, "size", 1024, "record value bytes of the well-behaved producer")
	fs.IntVar(&o.records, "records", 100_000, "at most this many of its records per phase")
	fs.DurationVar(&o.bound, "bound", 30*time.Second,
		"time bound of one produce or consume; the bench fails past it")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	o.attack.idle = o.conns - o.attack.slow - o.attack.greedy
	if o.attack.idle < 0 || o.attack.slow < 0 || o.attack.greedy < 0 || o.size <= 0 ||
		o.records <= 0 || o.quota <= 0 || o.attack.slowInterval <= 0 || o.bound <= 0 {
		fmt.Fprintln(stderr, "bench hostile: --slow + --greedy must not pass --conns; "+
			"sizes, counts, times and --quota must be positive")
		return 2
	}
	return runUntilSignal("bench hostile", stderr, func(ctx context.Context) error {
		return benchHostile(ctx, o, stdout)
	})
}

func benchHostile(ctx context.Context, o hostileOpts, out io.Writer) error {
	if o.bootstrap == "" {
		node, err := startHostileNode(ctx, &o)
		if err != nil {
			return err
		}
		defer node.stop()
	}
	fmt.Fprintf(out, "CONTEXT hostile_node=%s hostile_settings=%q conns=%d source=%q\n",
		o.bootstrap, o.settings.String(), o.conns, o.attack.source)
	env, err := setUpHostile(ctx, &o)
	if err != nil {
		return err
	}
	defer env.tearDown()
	if err := hostilePhase(ctx, o, env, "hostile_baseline", o.baseline, out); err != nil {
		return err
	}
	before := scrapeLimits(ctx, o.metrics)
	a, err := startAttack(ctx, o.attack)
	if err != nil {
		return err
	}
	defer a.stop()
	if err := hostilePhase(ctx, o, env, "hostile", o.hostile, out); err != nil {
		return err
	}
	during := scrapeLimits(ctx, o.metrics)
	rss, fds := serverMem(o.serverPID)
	st := a.stop()
	end := scrapeLimits(ctx, o.metrics)
	printAttack(out, o, st)
	after, err := env.produceOne(ctx)
	if err != nil {
		return fmt.Errorf("after the attack: %w", err)
	}
	printHostileNode(out, hostileNodeSeen{before: before, during: during, end: end,
		rssMiB: rss, fds: fds, after: after})
	return ctx.Err()
}

// hostileEnv is what both phases use: the well-behaved client and what to undo.
type hostileEnv struct {
	o      *hostileOpts
	cl     *kgo.Client // the well-behaved producer, kept across the phases
	adm    *kadm.Client
	admCl  *kgo.Client
	topics []string
	value  []byte
}

// setUpHostile creates the bench's topics and sets the greedy clients' quota.
func setUpHostile(ctx context.Context, o *hostileOpts) (*hostileEnv, error) {
	admCl, err := kgo.NewClient(seeds(o.bootstrap), kgo.ClientID("sluice-bench"))
	if err != nil {
		return nil, err
	}
	env := &hostileEnv{o: o, admCl: admCl, adm: kadm.NewClient(admCl)}
	ns := time.Now().UnixNano()
	topic := fmt.Sprintf("bench-hostile-%d", ns)
	o.attack.greedyTopic = fmt.Sprintf("bench-hostile-greedy-%d", ns)
	o.attack.greedyClient = fmt.Sprintf("sluice-bench-greedy-%d", ns)
	o.attack.addr = strings.Split(o.bootstrap, ",")[0] // the attack needs one broker
	if err := env.create(ctx, topic, o.attack.greedyTopic); err != nil {
		env.tearDown()
		return nil, err
	}
	if err := env.setQuota(ctx, false); err != nil {
		env.tearDown()
		return nil, err
	}
	env.value = make([]byte, o.size)
	_, _ = rand.Read(env.value)
	env.cl, err = kgo.NewClient(seeds(o.bootstrap), kgo.ClientID("sluice-bench-wellbehaved"),
		kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		env.tearDown()
		return nil, err
	}
	return env, nil
}

func (e *hostileEnv) create(ctx context.Context, topics ...string) error {
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, t := range topics {
		resp, err := e.adm.CreateTopic(c, 1, 1, nil, t)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return fmt.Errorf("create topic %s: %w (is a node running at %s?)", t, err,
				e.o.bootstrap)
		}
		e.topics = append(e.topics, t)
		if err := benchAwaitTopic(c, e.adm, t, 1, 1); err != nil {
			return err
		}
	}
	return nil
}

// setQuota sets (or removes) the greedy client id's producer_byte_rate.
func (e *hostileEnv) setQuota(ctx context.Context, remove bool) error {
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := e.adm.AlterClientQuotas(c, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id",
			Name: kmsg.StringPtr(e.o.attack.greedyClient)}},
		Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate",
			Value: float64(e.o.quota), Remove: remove}},
	}})
	if err == nil && len(res) == 1 {
		err = res[0].Err
	}
	if err != nil {
		return fmt.Errorf("client quota of %s: %w", e.o.attack.greedyClient, err)
	}
	return nil
}

// tearDown removes the quota and the topics, with bounds of its own so that it runs
// after an interrupt too.
func (e *hostileEnv) tearDown() {
	if e.cl != nil {
		e.cl.Close()
	}
	_ = e.setQuota(context.Background(), true)
	_ = benchDeleteTopics(benchOpts{bootstrap: e.o.bootstrap}, e.topics)
	e.admCl.Close()
}

// hostilePhase produces one record at a time for d (at most o.records), then reads
// them back, and prints both figures.
func hostilePhase(ctx context.Context, o hostileOpts, env *hostileEnv, name string,
	d time.Duration, out io.Writer) error {
	lat := make([]time.Duration, 0, min(o.records, 1<<16))
	from := int64(-1)
	start := time.Now()
	for len(lat) < o.records && time.Since(start) < d && ctx.Err() == nil {
		t0 := time.Now()
		off, err := env.produce(ctx)
		if err != nil {
			return fmt.Errorf("%s: the well-behaved producer's record %d: %w", name,
				len(lat)+1, err)
		}
		lat = append(lat, time.Since(t0))
		if from < 0 {
			from = off
		}
	}
	if len(lat) == 0 {
		return fmt.Errorf("%s: no record produced", name)
	}
	printHostileProduce(out, name, lat, time.Since(start))
	took, err := env.consume(ctx, from, len(lat))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	fmt.Fprintf(out, "FIGURE system=sluice test=%s_consume msgs_per_s=%.0f records=%d "+
		"took_ms=%d\n", name, float64(len(lat))/took.Seconds(), len(lat), took.Milliseconds())
	return nil
}

// produce writes one record to partition 0 within o.bound and returns its offset.
func (e *hostileEnv) produce(ctx context.Context) (int64, error) {
	c, cancel := context.WithTimeout(ctx, e.o.bound)
	defer cancel()
	r, err := e.cl.ProduceSync(c, &kgo.Record{Partition: 0, Value: e.value}).First()
	if err != nil {
		return 0, err
	}
	return r.Offset, nil
}

// produceOne times one more produce: the node still serves after the attack.
func (e *hostileEnv) produceOne(ctx context.Context) (time.Duration, error) {
	t0 := time.Now()
	_, err := e.produce(ctx)
	return time.Since(t0), err
}

// consume reads n records of partition 0 from offset from, with a new client, within
// o.bound.
func (e *hostileEnv) consume(ctx context.Context, from int64, n int) (time.Duration, error) {
	start := time.Now()
	cl, err := kgo.NewClient(seeds(e.o.bootstrap), kgo.ClientID("sluice-bench-wellbehaved"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
			e.topics[0]: {0: kgo.NewOffset().At(from)}}))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	c, cancel := context.WithTimeout(ctx, e.o.bound)
	defer cancel()
	got := 0
	for got < n && c.Err() == nil {
		fs := cl.PollFetches(c)
		got += fs.NumRecords()
	}
	if got < n {
		return 0, fmt.Errorf("consume read %d of %d records within %v", got, n, e.o.bound)
	}
	return time.Since(start), nil
}

func printHostileProduce(out io.Writer, name string, lat []time.Duration, el time.Duration) {
	slices.Sort(lat)
	us := func(d time.Duration) time.Duration { return d.Round(time.Microsecond) }
	fmt.Fprintf(out, "FIGURE system=sluice test=produce_%s msgs_per_s=%.0f "+
		"ack_latency(P50:%s P99:%s max:%s) acked=%d failed=0\n", name,
		float64(len(lat))/el.Seconds(), us(lat[len(lat)/2]), us(lat[len(lat)*99/100]),
		us(lat[len(lat)-1]), len(lat))
}

func printAttack(out io.Writer, o hostileOpts, st attackStats) {
	ms := func(i int) int64 {
		if len(st.slowCloses) == 0 {
			return 0
		}
		return st.slowCloses[i].Milliseconds()
	}
	n := len(st.slowCloses)
	fmt.Fprintf(out, "FIGURE system=sluice test=hostile_connections conns=%d idle=%d "+
		"idle_accepted=%d idle_refused=%d idle_closed=%d slow=%d slow_accepted=%d "+
		"slow_refused=%d slow_closes=%d slow_close_min_ms=%d slow_close_p50_ms=%d "+
		"slow_close_max_ms=%d greedy=%d greedy_closed=%d open_ms=%d\n", o.conns,
		o.attack.idle, st.idleAccepted, st.idleRefused, st.idleClosed, o.attack.slow,
		st.slowAccepted, st.slowRefused, n, ms(0), ms(n/2), ms(max(n-1, 0)),
		o.attack.greedy, st.greedyDead, st.openTook.Milliseconds())
	sec := st.ran.Seconds()
	fmt.Fprintf(out, "FIGURE system=sluice test=hostile_greedy msgs_per_s=%.0f "+
		"KiB_per_s=%.1f quota_KiB_per_s=%.1f throttled=%d conns=%d\n",
		float64(st.greedyRecords)/sec, float64(st.greedyAcked)/sec/1024,
		float64(o.quota)/1024, st.greedyThrottled, o.attack.greedy)
}
