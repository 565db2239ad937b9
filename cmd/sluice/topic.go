package main

// `sluice topic`: create, list, describe, alter and delete topics through kadm.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register("topic", command{
		summary: "create, list, describe, alter and delete topics",
		run:     runTopic,
	})
}

// topicAction is one `sluice topic <action>`.
type topicAction struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

var topicActions = map[string]topicAction{
	"create":   {"create a topic", topicCreate},
	"list":     {"list topics", topicList},
	"describe": {"show partitions, leaders, offsets, sizes and overridden configs", topicDescribe},
	"alter":    {"add partitions or change configs", topicAlter},
	"delete":   {"delete a topic and its data", topicDelete},
	"reassign": {"move a partition to other brokers, or cancel its move",
		topicReassign},
	"reassignments": {"list the partition moves in progress", topicReassignments},
}

func runTopic(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || isHelp(args[0]) {
		topicUsage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	a, ok := topicActions[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "sluice topic: unknown action %q\n\n", args[0])
		topicUsage(stderr)
		return 2
	}
	return exitStatus("sluice topic "+args[0], a.run(args[1:], stdout, stderr), stderr)
}

func topicUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: sluice topic <action> [flags]\n\nactions:")
	for _, name := range sortedKeys(topicActions) {
		fmt.Fprintf(w, "  %-13s %s\n", name, topicActions[name].summary)
	}
	fmt.Fprintln(w, "\nRun 'sluice topic <action> -h' for an action's flags.")
}

// admin connects and wraps the client for admin requests, whose broker-side timeout
// follows --timeout too.
func admin(ctx context.Context, cf clientFlags) (*kadm.Client, func(), error) {
	cl, err := connect(ctx, cf)
	if err != nil {
		return nil, nil, err
	}
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(cf.timeout.Milliseconds()))
	return adm, cl.Close, nil
}

// createOptions are the parsed arguments of `sluice topic create`.
type createOptions struct {
	client            clientFlags
	topic             string
	partitions        int
	replicationFactor int
	configs           keyValues
}

func parseCreate(args []string, stderr io.Writer) (createOptions, error) {
	var o createOptions
	fs := newFlagSet("sluice topic create",
		"sluice topic create NAME [--partitions N] [--replication-factor R] [--config k=v]...",
		stderr)
	o.client.register(fs)
	fs.IntVar(&o.partitions, "partitions", -1, "number of partitions (-1: the broker's num.partitions)")
	fs.IntVar(&o.replicationFactor, "replication-factor", -1,
		"copies of each partition (-1: the broker's default.replication.factor)")
	fs.Var(&o.configs, "config", "topic config `name=value`; repeatable")
	pos, err := parseCommand(fs, args, "NAME")
	if err != nil {
		return o, err
	}
	o.topic = pos[0]
	switch {
	case o.partitions == 0 || o.partitions < -1 || o.partitions > 1<<20:
		return o, usageErr(fs, "--partitions must be between 1 and 1048576, got %d", o.partitions)
	case o.replicationFactor == 0 || o.replicationFactor < -1 || o.replicationFactor > 1<<15-1:
		return o, usageErr(fs, "--replication-factor must be between 1 and 32767, got %d",
			o.replicationFactor)
	}
	return o, checkClient(fs, o.client)
}

func topicCreate(args []string, stdout, stderr io.Writer) error {
	o, err := parseCreate(args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.client.timeout*2)
	defer cancel()
	adm, done, err := admin(ctx, o.client)
	if err != nil {
		return err
	}
	defer done()
	resp, err := adm.CreateTopic(ctx, int32(o.partitions), int16(o.replicationFactor),
		o.configs.ptrMap(), o.topic)
	if err != nil {
		return friendly(err, o.topic, resp.ErrMessage)
	}
	fmt.Fprintf(stdout, "created topic %q with %d partitions, replication factor %d\n",
		o.topic, resp.NumPartitions, resp.ReplicationFactor)
	return nil
}

func topicList(args []string, stdout, stderr io.Writer) error {
	var cf clientFlags
	fs := newFlagSet("sluice topic list", "sluice topic list", stderr)
	cf.register(fs)
	if _, err := parseCommand(fs, args); err != nil {
		return err
	}
	if err := checkClient(fs, cf); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), cf.timeout*2)
	defer cancel()
	adm, done, err := admin(ctx, cf)
	if err != nil {
		return err
	}
	defer done()
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		return friendly(err, "", "")
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITIONS\tREPLICATION")
	for _, t := range topics.Sorted() {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", t.Topic, len(t.Partitions), t.Partitions.NumReplicas())
	}
	return tw.Flush()
}

// topicArg parses the commands that take only a topic name and the client flags.
func topicArg(name string, args []string, stderr io.Writer) (clientFlags, string, error) {
	var cf clientFlags
	fs := newFlagSet(name, name+" NAME", stderr)
	cf.register(fs)
	pos, err := parseCommand(fs, args, "NAME")
	if err != nil {
		return cf, "", err
	}
	return cf, pos[0], checkClient(fs, cf)
}

func topicDelete(args []string, stdout, stderr io.Writer) error {
	cf, topic, err := topicArg("sluice topic delete", args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), cf.timeout*2)
	defer cancel()
	adm, done, err := admin(ctx, cf)
	if err != nil {
		return err
	}
	defer done()
	resp, err := adm.DeleteTopic(ctx, topic)
	if err != nil {
		return friendly(err, topic, resp.ErrMessage)
	}
	fmt.Fprintf(stdout, "deleted topic %q\n", topic)
	return nil
}

// alterOptions are the parsed arguments of `sluice topic alter`.
type alterOptions struct {
	client     clientFlags
	topic      string
	partitions int
	set        keyValues
	unset      nameList
}

func parseAlter(args []string, stderr io.Writer) (alterOptions, error) {
	var o alterOptions
	fs := newFlagSet("sluice topic alter",
		"sluice topic alter NAME [--partitions N] [--config k=v]... [--delete-config k]...",
		stderr)
	o.client.register(fs)
	fs.IntVar(&o.partitions, "partitions", 0,
		"new total partition count (partitions can only be added)")
	fs.Var(&o.set, "config", "set topic config `name=value`; repeatable")
	fs.Var(&o.unset, "delete-config", "return config `name` to its default; repeatable")
	pos, err := parseCommand(fs, args, "NAME")
	if err != nil {
		return o, err
	}
	o.topic = pos[0]
	switch {
	case o.partitions < 0 || o.partitions > 1<<20:
		return o, usageErr(fs, "--partitions must be between 1 and 1048576, got %d", o.partitions)
	case o.partitions == 0 && len(o.set.order) == 0 && len(o.unset) == 0:
		return o, usageErr(fs, "nothing to change: give --partitions, --config or --delete-config")
	}
	for _, k := range o.unset {
		if _, both := o.set.values[k]; both {
			return o, usageErr(fs, "%q is both set and deleted", k)
		}
	}
	return o, checkClient(fs, o.client)
}

// alterations lists the IncrementalAlterConfigs operations in a stable order.
func (o *alterOptions) alterations() []kadm.AlterConfig {
	var out []kadm.AlterConfig
	for _, k := range o.set.order {
		v := o.set.values[k]
		out = append(out, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	for _, k := range o.unset {
		out = append(out, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	return out
}

func topicAlter(args []string, stdout, stderr io.Writer) error {
	o, err := parseAlter(args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.client.timeout*3)
	defer cancel()
	adm, done, err := admin(ctx, o.client)
	if err != nil {
		return err
	}
	defer done()
	if o.partitions > 0 {
		if err := growPartitions(ctx, adm, o.topic, o.partitions); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "topic %q now has %d partitions\n", o.topic, o.partitions)
	}
	if alts := o.alterations(); len(alts) > 0 {
		rs, err := adm.AlterTopicConfigs(ctx, alts, o.topic)
		if err != nil {
			return friendly(err, o.topic, "")
		}
		r, err := rs.On(o.topic, nil)
		if err == nil {
			err = r.Err
		}
		if err != nil {
			return friendly(err, o.topic, r.ErrMessage)
		}
		fmt.Fprintf(stdout, "updated %d config(s) of topic %q\n", len(alts), o.topic)
	}
	return nil
}

// growPartitions sets the topic's partition count to n, explaining the no-op and
// shrink cases itself because Kafka's INVALID_PARTITIONS text does not say which it was.
func growPartitions(ctx context.Context, adm *kadm.Client, topic string, n int) error {
	td, err := describeTopic(ctx, adm, topic)
	if err != nil {
		return err
	}
	switch have := len(td.Partitions); {
	case n == have:
		return fmt.Errorf("topic %q already has %d partitions", topic, n)
	case n < have:
		return fmt.Errorf("topic %q has %d partitions and partitions cannot be removed",
			topic, have)
	}
	rs, err := adm.UpdatePartitions(ctx, n, topic)
	if err != nil {
		return friendly(err, topic, "")
	}
	r, ok := rs[topic]
	if !ok {
		return fmt.Errorf("the broker did not answer for topic %q", topic)
	}
	return friendly(r.Err, topic, r.ErrMessage)
}

// describeTopic loads one topic's metadata, mapping "absent" to a clear error.
func describeTopic(ctx context.Context, adm *kadm.Client, topic string) (kadm.TopicDetail, error) {
	tds, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return kadm.TopicDetail{}, friendly(err, topic, "")
	}
	td, ok := tds[topic]
	if !ok {
		return td, friendly(kerr.UnknownTopicOrPartition, topic, "")
	}
	return td, friendly(td.Err, topic, "")
}

func topicDescribe(args []string, stdout, stderr io.Writer) error {
	cf, topic, err := topicArg("sluice topic describe", args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), cf.timeout*3)
	defer cancel()
	adm, done, err := admin(ctx, cf)
	if err != nil {
		return err
	}
	defer done()
	td, err := describeTopic(ctx, adm, topic)
	if err != nil {
		return err
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err = someOffsetsUnknown(err, stderr); err != nil {
		return friendly(err, topic, "")
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err = someOffsetsUnknown(err, stderr); err != nil {
		return friendly(err, topic, "")
	}
	configs, err := topicConfigs(ctx, adm, topic, stderr)
	if err != nil {
		return err
	}
	sizes := leaderSizes(ctx, adm, td, stderr)
	if err := printDescription(stdout, td, starts, ends, sizes, configs); err != nil {
		return err
	}
	describeReassignments(ctx, adm, td, stdout)
	return nil
}

// topicConfigs is the topic's overridden configs. A principal that may describe the
// topic but not its configs (DESCRIBE without DESCRIBE_CONFIGS) still gets the rest of
// the description: the configs show "?" (nil), with the reason on stderr.
func topicConfigs(ctx context.Context, adm *kadm.Client, topic string,
	stderr io.Writer) ([]kadm.Config, error) {
	cfgs, err := adm.DescribeTopicConfigs(ctx, topic)
	var rc kadm.ResourceConfig
	if err == nil {
		if rc, err = cfgs.On(topic, nil); err == nil {
			err = rc.Err
		}
	}
	switch {
	case errors.Is(err, kerr.TopicAuthorizationFailed):
		fmt.Fprintf(stderr, "configs unknown: %v\n", err)
		return nil, nil
	case err != nil:
		return nil, friendly(err, topic, rc.ErrMessage)
	}
	return overridden(rc.Configs), nil
}

// someOffsetsUnknown lets a description go on when some partitions' leaders could not
// be asked their offsets (a dead leader not replaced yet): those show "?", with the
// reason on stderr. Any other error is returned.
func someOffsetsUnknown(err error, stderr io.Writer) error {
	var se *kadm.ShardErrors
	if !errors.As(err, &se) {
		return err
	}
	for _, e := range se.Errs {
		fmt.Fprintf(stderr, "offsets unknown for the partitions led by broker %d: %v\n",
			e.Broker.NodeID, e.Err)
	}
	return nil
}

// leaderSizes is the size in bytes of each partition's log on its leader
// (DescribeLogDirs, asked of every broker). A broker that could not answer (down,
// DESCRIBE on the cluster refused, a version without the API) leaves its partitions
// out, with the reason on stderr: they show "?".
func leaderSizes(ctx context.Context, adm *kadm.Client, td kadm.TopicDetail,
	stderr io.Writer) map[int32]int64 {
	set := kadm.TopicsSet{}
	set.Add(td.Topic, td.Partitions.Numbers()...)
	all, err := adm.DescribeAllLogDirs(ctx, set)
	var se *kadm.ShardErrors
	switch {
	case errors.As(err, &se):
		for _, e := range se.Errs {
			fmt.Fprintf(stderr, "sizes unknown for the partitions on broker %d: %v\n",
				e.Broker.NodeID, e.Err)
		}
	case err != nil:
		fmt.Fprintf(stderr, "sizes unknown: %v\n", err)
	}
	sizes := map[int32]int64{}
	for _, p := range td.Partitions {
		if dp, ok := all[p.Leader].LookupPartition(td.Topic, p.Partition); ok {
			sizes[p.Partition] = dp.Size
		}
	}
	return sizes
}

// overridden keeps the configs set on the topic itself, sorted by name.
func overridden(cs []kadm.Config) []kadm.Config {
	out := []kadm.Config{} // not nil: nil is "unknown" to printDescription
	for _, c := range cs {
		if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func printDescription(w io.Writer, td kadm.TopicDetail, starts, ends kadm.ListedOffsets,
	sizes map[int32]int64, configs []kadm.Config) error {
	fmt.Fprintf(w, "Topic: %s\nPartitions: %d\nReplication factor: %d\n",
		td.Topic, len(td.Partitions), td.Partitions.NumReplicas())
	switch {
	case configs == nil:
		fmt.Fprintln(w, "Configs: ?")
	case len(configs) == 0:
		fmt.Fprintln(w, "Configs: (all defaults)")
	default:
		parts := make([]string, 0, len(configs))
		for _, c := range configs {
			parts = append(parts, c.Key+"="+c.MaybeValue())
		}
		fmt.Fprintf(w, "Configs: %s\n", strings.Join(parts, " "))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tLEADER\tREPLICAS\tISR\tSTART\tEND\tSIZE")
	for _, p := range td.Partitions.Sorted() {
		size, ok := sizes[p.Partition]
		sizeText := "?"
		if ok {
			sizeText = fmt.Sprint(size)
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\n", p.Partition, p.Leader,
			ids(p.Replicas), ids(p.ISR), offsetText(starts, td.Topic, p.Partition),
			offsetText(ends, td.Topic, p.Partition), sizeText)
	}
	return tw.Flush()
}

func ids(xs []int32) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ",")
}

// offsetText shows a listed offset, or "?" when the broker could not list it.
func offsetText(l kadm.ListedOffsets, topic string, p int32) string {
	o, ok := l.Lookup(topic, p)
	if !ok || o.Err != nil {
		return "?"
	}
	return fmt.Sprint(o.Offset)
}
