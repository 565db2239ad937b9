package main

// `sluice topic reassign` and `sluice topic reassignments`: move a partition's replicas
// (Kafka's AlterPartitionReassignments, KIP-455) and list the moves in progress
// (ListPartitionReassignments). docs/operations.md, "Adding a node and moving
// partitions".

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// reassignOptions are the parsed arguments of `sluice topic reassign`.
type reassignOptions struct {
	client    clientFlags
	topic     string
	partition int
	replicas  []int32
	cancel    bool
	wait      bool
}

func parseReassign(args []string, stderr io.Writer) (reassignOptions, error) {
	var o reassignOptions
	var replicas string
	fs := newFlagSet("sluice topic reassign", "sluice topic reassign NAME --partition N "+
		"(--replicas ID,ID,... [--wait] | --cancel); or sluice topic reassign --rebalance "+
		"[NAME...] [--brokers ID,...] [--dry-run] [--wait]", stderr)
	o.client.register(fs)
	fs.IntVar(&o.partition, "partition", -1, "the partition to move")
	fs.StringVar(&replicas, "replicas", "",
		"the target broker ids, comma-separated; the first is the preferred leader")
	fs.BoolVar(&o.cancel, "cancel", false, "cancel the partition's reassignment in progress")
	fs.BoolVar(&o.wait, "wait", false,
		"wait until the new replicas caught up and the move completed (bounded by --timeout)")
	pos, err := parseCommand(fs, args, "NAME")
	if err != nil {
		return o, err
	}
	o.topic = pos[0]
	switch {
	case o.partition < 0:
		return o, usageErr(fs, "--partition is required (0 or more)")
	case o.cancel == (replicas != ""):
		return o, usageErr(fs, "give exactly one of --replicas and --cancel")
	case o.cancel && o.wait:
		return o, usageErr(fs, "--wait goes with --replicas")
	}
	if !o.cancel {
		if o.replicas, err = parseBrokerIDs(replicas); err != nil {
			return o, usageErr(fs, "--replicas: %v", err)
		}
	}
	return o, checkClient(fs, o.client)
}

// parseBrokerIDs reads "1,2,4".
func parseBrokerIDs(s string) ([]int32, error) {
	var out []int32
	for _, part := range strings.Split(s, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(part), 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("%q is not a broker id", part)
		}
		out = append(out, int32(id))
	}
	return out, nil
}

func topicReassign(args []string, stdout, stderr io.Writer) error {
	if wantsRebalance(args) {
		return topicRebalance(args, stdout, stderr) // topic_rebalance.go
	}
	o, err := parseReassign(args, stderr)
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
	var req kadm.AlterPartitionAssignmentsReq
	if o.cancel {
		req.CancelAssign(o.topic, int32(o.partition))
	} else {
		req.Assign(o.topic, int32(o.partition), o.replicas)
	}
	rs, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return friendly(err, o.topic, "")
	}
	r, ok := rs[o.topic][int32(o.partition)]
	if !ok {
		return fmt.Errorf("the controller did not answer for %s-%d", o.topic, o.partition)
	}
	switch {
	case errors.Is(r.Err, kerr.UnknownTopicOrPartition):
		return fmt.Errorf("partition %s-%d does not exist (or has no replica placement: "+
			"a topic created without --voters)", o.topic, o.partition)
	case errors.Is(r.Err, kerr.NoReassignmentInProgress):
		return fmt.Errorf("%s-%d is not being reassigned: nothing to cancel", o.topic,
			o.partition)
	case r.Err != nil:
		return friendly(r.Err, o.topic, r.ErrMessage)
	}
	if o.cancel {
		fmt.Fprintf(stdout, "cancelled the reassignment of %s-%d\n", o.topic, o.partition)
		return nil
	}
	fmt.Fprintf(stdout, "reassignment of %s-%d to replicas %s started\n", o.topic,
		o.partition, ids(o.replicas))
	if !o.wait {
		fmt.Fprintln(stdout, "follow it with: sluice topic reassignments")
		return nil
	}
	return waitReassigned(ctx, adm, o, stdout)
}

// waitReassigned polls until the partition is no longer being reassigned.
func waitReassigned(ctx context.Context, adm *kadm.Client, o reassignOptions,
	stdout io.Writer) error {
	set := kadm.TopicsSet{}
	set.Add(o.topic, int32(o.partition))
	for {
		rs, err := adm.ListPartitionReassignments(ctx, set)
		if err != nil {
			return friendly(err, o.topic, "")
		}
		if _, moving := rs[o.topic][int32(o.partition)]; !moving {
			fmt.Fprintf(stdout, "reassignment of %s-%d complete\n", o.topic, o.partition)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s-%d is still being reassigned (the new replicas are "+
				"catching up); follow it with: sluice topic reassignments", o.topic,
				o.partition)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func topicReassignments(args []string, stdout, stderr io.Writer) error {
	var cf clientFlags
	fs := newFlagSet("sluice topic reassignments", "sluice topic reassignments", stderr)
	cf.register(fs)
	if _, err := parseCommand(fs, args); err != nil {
		return err
	}
	if err := checkClient(fs, cf); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), cf.timeout*2)
	defer cancel()
	cl, err := connect(ctx, cf)
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := listReassignments(ctx, cl, nil)
	if err != nil {
		return friendly(err, "", "")
	}
	if len(resp.Topics) == 0 {
		fmt.Fprintln(stdout, "no reassignment in progress")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tREPLICAS\tADDING\tREMOVING")
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", t.Topic, p.Partition, ids(p.Replicas),
				dash(p.AddingReplicas), dash(p.RemovingReplicas))
		}
	}
	return tw.Flush()
}

// listReassignments asks the controller for the reassignments in progress: of every
// partition (topics nil; kadm's ListPartitionReassignments cannot ask for all), or of
// the named topics' partitions.
func listReassignments(ctx context.Context, cl *kgo.Client, topics map[string][]int32) (
	*kmsg.ListPartitionReassignmentsResponse, error) {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	for t, ps := range topics {
		rt := kmsg.NewListPartitionReassignmentsRequestTopic()
		rt.Topic, rt.Partitions = t, ps
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	return resp, nil
}

// describeReassignments adds the partitions of td being reassigned to a description;
// nothing when none is (or the controller cannot be asked: a description without it
// is still useful).
func describeReassignments(ctx context.Context, adm *kadm.Client, td kadm.TopicDetail,
	w io.Writer) {
	set := kadm.TopicsSet{}
	for p := range td.Partitions {
		set.Add(td.Topic, p)
	}
	rs, err := adm.ListPartitionReassignments(ctx, set)
	if err != nil {
		return
	}
	for _, r := range rs.Sorted() {
		fmt.Fprintf(w, "Reassigning partition %d: replicas %s, adding %s, removing %s\n",
			r.Partition, ids(r.Replicas), dash(r.AddingReplicas), dash(r.RemovingReplicas))
	}
}

func dash(xs []int32) string {
	if len(xs) == 0 {
		return "-"
	}
	return ids(xs)
}
