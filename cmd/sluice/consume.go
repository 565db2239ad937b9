package main

// `sluice consume`: print a topic's records, one value per line. Before consuming it
// checks, with bounded requests, that the topic exists, that the broker offers consumer
// groups when --group is given, and (with --exit-at-end) where each partition ends, so
// that the consuming loop only ever waits for records that are known to exist or for
// the user's Ctrl-C.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// pollMax bounds the records taken from kgo per poll, and so the output buffered
// between flushes.
const pollMax = 10000

func init() {
	register("consume", command{
		summary: "print a topic's records to stdout",
		run: func(args []string, _ io.Reader, stdout, stderr io.Writer) int {
			return exitStatus("sluice consume", runConsume(args, stdout, stderr), stderr)
		},
	})
}

// consumeOptions are the parsed arguments of `sluice consume`.
type consumeOptions struct {
	client        clientFlags
	topic         string
	fromBeginning bool
	group         string
	max           int
	exitAtEnd     bool
	printKey      bool
	printOffset   bool
	separator     string
}

func parseConsume(args []string, stderr io.Writer) (consumeOptions, error) {
	var o consumeOptions
	fs := newFlagSet("sluice consume",
		"sluice consume TOPIC [--from-beginning] [--group G] [--max N] [--exit-at-end] "+
			"[--print-key] [--print-offset]", stderr)
	o.client.register(fs)
	fs.BoolVar(&o.fromBeginning, "from-beginning", false,
		"start at the oldest record (default: only new records)")
	fs.StringVar(&o.group, "group", "", "consume as a member of this consumer group")
	fs.IntVar(&o.max, "max", 0, "stop after this many records (0: no limit)")
	fs.BoolVar(&o.exitAtEnd, "exit-at-end", false,
		"stop once every partition's end, as of the start, is reached")
	fs.BoolVar(&o.printKey, "print-key", false, "print key<sep>value")
	fs.BoolVar(&o.printOffset, "print-offset", false, "prefix each line with partition:offset and a tab")
	fs.StringVar(&o.separator, "key-separator", ":", "separator printed by --print-key")
	pos, err := parseCommand(fs, args, "TOPIC")
	if err != nil {
		return o, err
	}
	o.topic = pos[0]
	if o.max < 0 {
		return o, usageErr(fs, "--max must be 0 or more, got %d", o.max)
	}
	return o, checkClient(fs, o.client)
}

// clientOpts are the kgo consumer settings for o.
func (o *consumeOptions) clientOpts() []kgo.Opt {
	start := kgo.NewOffset().AtEnd()
	if o.fromBeginning {
		start = kgo.NewOffset().AtStart()
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(o.client.seeds()...),
		kgo.DialTimeout(o.client.timeout),
		kgo.ClientID("sluice-cli"),
		kgo.ConsumeTopics(o.topic),
		kgo.ConsumeResetOffset(start),
	}
	sasl, _ := o.client.saslOpts() // checked when parsing
	opts = append(opts, sasl...)
	tlsOpts, _ := o.client.tls.opts() // checked when parsing
	opts = append(opts, tlsOpts...)
	if o.group != "" {
		// Commit only what was printed, so --max never skips records for the group.
		opts = append(opts, kgo.ConsumerGroup(o.group), kgo.AutoCommitMarks())
	}
	return opts
}

func runConsume(args []string, stdout, stderr io.Writer) error {
	o, err := parseConsume(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := &consumer{o: o, out: bufio.NewWriter(stdout)}
	if err := c.prepare(ctx); err != nil {
		return err
	}
	if c.finished() {
		return nil
	}
	cl, err := kgo.NewClient(o.clientOpts()...)
	if err != nil {
		return fmt.Errorf("bad client settings: %w", err)
	}
	err = c.loop(ctx, cl)
	c.leave(cl)
	return err
}

// consumer is the state of one consume run.
type consumer struct {
	o       consumeOptions
	out     *bufio.Writer
	printed int
	pos     map[int32]int64 // next offset to print, per partition (--exit-at-end)
	end     map[int32]int64 // log end offsets when the run started (--exit-at-end)
}

// prepare makes the bounded checks that precede consuming, on a short-lived client.
func (c *consumer) prepare(ctx context.Context) error {
	cl, err := connect(ctx, c.o.client)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*c.o.client.timeout)
	defer cancel()
	adm := kadm.NewClient(cl)
	if _, err := describeTopic(ctx, adm, c.o.topic); err != nil {
		return err
	}
	if c.o.group != "" {
		if err := checkGroupSupport(ctx, adm, c.o.group); err != nil {
			return err
		}
	}
	if c.o.exitAtEnd {
		return c.loadBounds(ctx, adm)
	}
	return nil
}

// checkGroupSupport fails with a plain sentence when a broker does not offer the
// consumer-group APIs, rather than letting kgo retry joining forever.
func checkGroupSupport(ctx context.Context, adm *kadm.Client, group string) error {
	vs, err := adm.ApiVersions(ctx)
	if err != nil {
		return friendly(err, "", "")
	}
	for _, v := range vs.Sorted() {
		if v.Err != nil {
			return friendly(v.Err, "", "")
		}
		for _, key := range []kmsg.Key{kmsg.FindCoordinator, kmsg.JoinGroup, kmsg.OffsetFetch} {
			if _, _, ok := v.KeyVersions(int16(key)); !ok {
				return groupUnsupported(group)
			}
		}
	}
	return nil
}

func groupUnsupported(group string) error {
	return fmt.Errorf("cannot consume as group %q: this broker does not support consumer "+
		"groups yet; consume without --group (add --from-beginning to read everything)", group)
}

// loadBounds records where each partition starts (for this run) and ends.
func (c *consumer) loadBounds(ctx context.Context, adm *kadm.Client) error {
	ends, err := adm.ListEndOffsets(ctx, c.o.topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return friendly(err, c.o.topic, "")
	}
	from := ends
	if c.o.fromBeginning {
		if from, err = adm.ListStartOffsets(ctx, c.o.topic); err == nil {
			err = from.Error()
		}
		if err != nil {
			return friendly(err, c.o.topic, "")
		}
	}
	var committed kadm.OffsetResponses
	if c.o.group != "" {
		if committed, err = adm.FetchOffsets(ctx, c.o.group); err != nil {
			return friendly(err, c.o.topic, "")
		}
	}
	c.pos, c.end = map[int32]int64{}, map[int32]int64{}
	ends.Each(func(l kadm.ListedOffset) {
		c.end[l.Partition] = l.Offset
		c.pos[l.Partition] = l.Offset
		if f, ok := from.Lookup(c.o.topic, l.Partition); ok {
			c.pos[l.Partition] = f.Offset
		}
		if cm, ok := committed.Lookup(c.o.topic, l.Partition); ok && cm.Err == nil && cm.At >= 0 {
			c.pos[l.Partition] = cm.At
		}
	})
	return nil
}

// finished reports whether the run has printed all it should.
func (c *consumer) finished() bool {
	if c.o.max > 0 && c.printed >= c.o.max {
		return true
	}
	if !c.o.exitAtEnd {
		return false
	}
	for p, end := range c.end {
		if c.pos[p] < end {
			return false
		}
	}
	return true
}

// loop polls and prints until finished, interrupted or failed. With --exit-at-end each
// poll is bounded by --timeout, because records are known to be waiting.
func (c *consumer) loop(ctx context.Context, cl *kgo.Client) error {
	for !c.finished() {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if c.o.exitAtEnd {
			pctx, cancel = context.WithTimeout(ctx, c.o.client.timeout)
		}
		fetches := cl.PollRecords(pctx, pollMax)
		cancel()
		if ctx.Err() != nil {
			return c.out.Flush() // Ctrl-C is the normal way to stop following a topic
		}
		if err := c.fetchErr(fetches); err != nil {
			c.out.Flush()
			return err
		}
		fetches.EachRecord(func(r *kgo.Record) { c.print(cl, r) })
		if err := c.out.Flush(); err != nil {
			return fmt.Errorf("writing output: %w", err)
		}
	}
	return nil
}

// fetchErr picks the first error of a poll that should end the run; errors kgo retries
// by itself are left to it.
func (c *consumer) fetchErr(fetches kgo.Fetches) error {
	for _, fe := range fetches.Errors() {
		var ge *kgo.ErrGroupSession
		switch {
		case errors.Is(fe.Err, context.DeadlineExceeded):
			return fmt.Errorf("no records arrived for %s although the log end says more "+
				"exist (raise --timeout?)", c.o.client.timeout)
		case errors.Is(fe.Err, context.Canceled), errors.Is(fe.Err, kgo.ErrClientClosed):
			return nil
		case errors.As(fe.Err, &ge):
			if isBrokerTooOld(ge.Err) {
				return groupUnsupported(c.o.group)
			}
			return fmt.Errorf("group %q: %v", c.o.group, friendly(ge.Err, c.o.topic, ""))
		case kerr.IsRetriable(fe.Err):
			continue
		}
		return friendly(fe.Err, c.o.topic, "")
	}
	return nil
}

// print writes one record unless --max is already reached.
func (c *consumer) print(cl *kgo.Client, r *kgo.Record) {
	if c.o.max > 0 && c.printed >= c.o.max {
		return
	}
	if c.o.printOffset {
		c.out.WriteString(strconv.Itoa(int(r.Partition)))
		c.out.WriteByte(':')
		c.out.WriteString(strconv.FormatInt(r.Offset, 10))
		c.out.WriteByte('\t')
	}
	if c.o.printKey {
		c.out.Write(r.Key)
		c.out.WriteString(c.o.separator)
	}
	c.out.Write(r.Value)
	c.out.WriteByte('\n')
	c.printed++
	if c.pos != nil {
		c.pos[r.Partition] = r.Offset + 1
	}
	if c.o.group != "" {
		cl.MarkCommitRecords(r)
	}
}

// leave commits what was printed and leaves the group, each bounded, then closes.
func (c *consumer) leave(cl *kgo.Client) {
	defer cl.Close()
	if c.o.group == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.o.client.timeout)
	defer cancel()
	cl.CommitMarkedOffsets(ctx)
	cl.LeaveGroupContext(ctx)
}
