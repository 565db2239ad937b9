package main

// `sluice produce`: one record per line of stdin, with an optional key before the
// separator. Delivery is asynchronous (kgo batches), every record is bounded by
// --timeout, and the exit status says whether every record was acknowledged.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// maxLineBytes bounds one input line, so a stream without newlines cannot grow the
// buffer without limit. It is above the broker's default max.message.bytes.
const maxLineBytes = 8 << 20

func init() {
	register("produce", command{
		summary: "produce lines from stdin as records",
		run: func(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
			return exitStatus("sluice produce", runProduce(args, stdin, stderr), stderr)
		},
	})
}

// produceOptions are the parsed arguments of `sluice produce`.
type produceOptions struct {
	client    clientFlags
	topic     string
	acks      string
	separator string
	partition int
}

func parseProduce(args []string, stderr io.Writer) (produceOptions, error) {
	var o produceOptions
	fs := newFlagSet("sluice produce",
		"sluice produce TOPIC [--acks 0|1|all] [--key-separator S] [--partition N] < lines",
		stderr)
	o.client.register(fs)
	fs.StringVar(&o.acks, "acks", "all", "acknowledgements to wait for: 0, 1 or all")
	fs.StringVar(&o.separator, "key-separator", ":",
		"a line holding this string is key<sep>value; empty: whole lines are values")
	fs.IntVar(&o.partition, "partition", -1, "send every record to this partition (-1: by key)")
	pos, err := parseCommand(fs, args, "TOPIC")
	if err != nil {
		return o, err
	}
	o.topic = pos[0]
	if _, err := acksOpt(o.acks); err != nil {
		return o, usageErr(fs, "%v", err)
	}
	if o.partition < -1 {
		return o, usageErr(fs, "--partition must be -1 or a partition number, got %d", o.partition)
	}
	return o, checkClient(fs, o.client)
}

// acksOpt maps --acks to kgo's setting.
func acksOpt(acks string) (kgo.Acks, error) {
	switch acks {
	case "0":
		return kgo.NoAck(), nil
	case "1":
		return kgo.LeaderAck(), nil
	case "all", "-1":
		return kgo.AllISRAcks(), nil
	}
	return kgo.Acks{}, fmt.Errorf("--acks must be 0, 1 or all, got %q", acks)
}

// clientOpts are the kgo producer settings for o.
func (o *produceOptions) clientOpts() []kgo.Opt {
	acks, _ := acksOpt(o.acks) // checked when parsing
	opts := []kgo.Opt{
		kgo.DefaultProduceTopic(o.topic),
		kgo.RequiredAcks(acks),
		kgo.RecordDeliveryTimeout(o.client.timeout),
		kgo.ProduceRequestTimeout(o.client.timeout),
		// Let the broker decide, as kcat does: it creates the topic when its
		// auto.create.topics.enable is on and answers "unknown topic" otherwise.
		kgo.AllowAutoTopicCreation(),
	}
	if o.acks != "all" && o.acks != "-1" {
		opts = append(opts, kgo.DisableIdempotentWrite()) // kgo requires it below acks=all
	}
	if o.partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	return opts
}

// record splits a line into key and value.
func (o *produceOptions) record(line string) *kgo.Record {
	r := &kgo.Record{Value: []byte(line)}
	if o.separator != "" {
		if k, v, ok := strings.Cut(line, o.separator); ok {
			r.Key, r.Value = []byte(k), []byte(v)
		}
	}
	if o.partition >= 0 {
		r.Partition = int32(o.partition)
	}
	return r
}

// tally counts outcomes reported by kgo's delivery goroutines. The first failure
// cancels the run: producing more of stdin could only fail the same way, one delivery
// timeout after another. So does a stall (see watch).
type tally struct {
	mu             sync.Mutex
	sent, ok, fail int
	first          error
	last           time.Time // of the last outcome, or of a send when none was pending
	stalled        bool
	cancel         context.CancelFunc
}

// sending counts a record handed to kgo.
func (t *tally) sending() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sent == t.ok+t.fail {
		t.last = time.Now()
	}
	t.sent++
}

// watch cancels the run when records are pending and none has had an outcome for
// bound. kgo's delivery timeout does not fire while it cannot reach the partition's
// leader at all (a dead node), and Produce then blocks on a full buffer forever.
func (t *tally) watch(ctx context.Context, bound time.Duration) {
	tick := time.NewTicker(max(bound/20, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		t.mu.Lock()
		if t.sent > t.ok+t.fail && time.Since(t.last) > bound {
			t.stalled = true
			t.cancel()
		}
		t.mu.Unlock()
	}
}

func (t *tally) done(_ *kgo.Record, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last = time.Now()
	if err == nil {
		t.ok++
		return
	}
	t.fail++
	if t.first == nil {
		t.first = err
		t.cancel()
	}
}

func runProduce(args []string, stdin io.Reader, stderr io.Writer) error {
	o, err := parseProduce(args, stderr)
	if err != nil {
		return err
	}
	var why causeRecorder
	cl, err := connect(context.Background(), o.client, append(o.clientOpts(), why.opts()...)...)
	if err != nil {
		return err
	}
	defer cl.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t := tally{cancel: cancel}
	go t.watch(ctx, o.client.timeout)
	readErr := o.send(ctx, cl, stdin, &t)
	// Every record carries its own delivery timeout, so Flush ends; the outer bound
	// is only a guard against a stuck client. After a failure the records still
	// buffered are failed at once instead.
	var flushErr error
	if ctx.Err() != nil {
		// A request in flight to a dead node can keep kgo waiting on it; do not.
		actx, acancel := context.WithTimeout(context.Background(), time.Second)
		defer acancel()
		flushErr = cl.AbortBufferedRecords(actx)
	} else {
		fctx, fcancel := context.WithTimeout(context.Background(), 2*o.client.timeout)
		defer fcancel()
		flushErr = cl.Flush(fctx)
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	pending := t.sent - t.ok - t.fail
	fmt.Fprintln(stderr, o.summary(t.sent, t.ok, t.fail+pending))
	switch {
	case t.stalled:
		return o.recordErr(kgo.ErrRecordTimeout, why.cause())
	case t.first != nil:
		return o.recordErr(t.first, why.cause())
	case flushErr != nil || pending > 0:
		return fmt.Errorf("%d record(s) were still unconfirmed after %s", pending, 2*o.client.timeout)
	}
	return readErr
}

// send produces every line of in, until ctx ends, counting each record in t.
func (o *produceOptions) send(ctx context.Context, cl *kgo.Client, in io.Reader,
	t *tally) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
	lines := 0
	for ctx.Err() == nil && sc.Scan() {
		t.sending()
		lines++
		// Produce blocks once kgo's bounded buffer is full, which paces the reading.
		cl.Produce(ctx, o.record(sc.Text()), t.done)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("line %d is longer than %d bytes", lines+1, maxLineBytes)
		}
		return fmt.Errorf("reading stdin: %w", err)
	}
	return nil
}

func (o *produceOptions) summary(sent, ok, failed int) string {
	verb := "produced"
	if o.acks == "0" {
		verb = "sent (acks=0, so unconfirmed)"
	}
	if failed == 0 {
		return fmt.Sprintf("%s %d record(s) to topic %q", verb, ok, o.topic)
	}
	return fmt.Sprintf("%s %d of %d record(s) to topic %q; %d failed", verb, ok, sent, o.topic,
		failed)
}

// recordErr words a failed record's error. cause is the last reason kgo met for not
// delivering (a broker error code or a failed connection), which a delivery timeout
// does not carry.
func (o *produceOptions) recordErr(err, cause error) error {
	switch {
	case strings.Contains(err.Error(), "invalid record partitioning choice"):
		return fmt.Errorf("partition %d does not exist in topic %q", o.partition, o.topic)
	case errors.Is(err, kgo.ErrRecordTimeout) && cause != nil:
		return fmt.Errorf("records were not acknowledged within %s: %s", o.client.timeout,
			causeText(cause, o.topic))
	case errors.Is(err, kgo.ErrRecordTimeout):
		return fmt.Errorf("records were not acknowledged within %s (raise --timeout?)",
			o.client.timeout)
	}
	return friendly(err, o.topic, "")
}
