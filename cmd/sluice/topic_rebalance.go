package main

// `sluice topic reassign --rebalance`: spread existing partitions' replicas evenly over
// the brokers (typically after adding one), as a set of ordinary reassignments
// (AlterPartitionReassignments). The plan is controller.PlanRebalance, computed here
// from the cluster's metadata, as Kafka's kafka-reassign-partitions --generate does;
// --dry-run prints it without moving anything. docs/operations.md, "Adding a broker".

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/controller"
)

type rebalanceOptions struct {
	client  clientFlags
	topics  []string // none: every topic
	brokers []int32  // none: every live broker the metadata lists
	dryRun  bool
	wait    bool
}

func parseRebalance(args []string, stderr io.Writer) (rebalanceOptions, error) {
	var o rebalanceOptions
	var brokers string
	var rebalance bool
	fs := newFlagSet("sluice topic reassign", "sluice topic reassign --rebalance [NAME...] "+
		"[--brokers ID,ID,...] [--dry-run] [--wait]", stderr)
	o.client.register(fs)
	fs.BoolVar(&rebalance, "rebalance", false, "spread the replicas of every partition (or "+
		"of the named topics) evenly over the brokers, moving as few as possible")
	fs.StringVar(&brokers, "brokers", "", "the brokers to spread over (default: every "+
		"live broker); replicas on any other broker move off it")
	fs.BoolVar(&o.dryRun, "dry-run", false, "print the plan, move nothing")
	fs.BoolVar(&o.wait, "wait", false,
		"wait until every move completed (bounded by --timeout)")
	pos, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return o, err
	}
	if err != nil {
		return o, errUsage // flag printed the message and the usage
	}
	o.topics = pos
	if !rebalance {
		return o, usageErr(fs, "--rebalance is required here")
	}
	if o.dryRun && o.wait {
		return o, usageErr(fs, "--wait goes without --dry-run")
	}
	if brokers != "" {
		if o.brokers, err = parseBrokerIDs(brokers); err != nil {
			return o, usageErr(fs, "--brokers: %v", err)
		}
	}
	return o, checkClient(fs, o.client)
}

// wantsRebalance says whether `sluice topic reassign` was given --rebalance.
func wantsRebalance(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool {
		return a == "--rebalance" || a == "-rebalance" || a == "--rebalance=true"
	})
}

func topicRebalance(args []string, stdout, stderr io.Writer) error {
	o, err := parseRebalance(args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.client.timeout*2)
	defer cancel()
	cl, err := connect(ctx, o.client)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(o.client.timeout.Milliseconds()))
	parts, brokers, err := rebalanceInput(ctx, adm, cl, o)
	if err != nil {
		return err
	}
	moves, err := controller.PlanRebalance(parts, brokers)
	if err != nil {
		return err
	}
	printRebalancePlan(stdout, parts, brokers, moves)
	if o.dryRun || len(moves) == 0 {
		return nil
	}
	var req kadm.AlterPartitionAssignmentsReq
	for _, m := range moves {
		req.Assign(m.Topic, m.Partition, m.To)
	}
	rs, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return friendly(err, "", "")
	}
	failed := 0
	for _, r := range rs.Sorted() {
		if r.Err != nil {
			failed++
			fmt.Fprintf(stderr, "%s-%d: %v %s\n", r.Topic, r.Partition, r.Err, r.ErrMessage)
		}
	}
	fmt.Fprintf(stdout, "started %d of %d moves\n", len(moves)-failed, len(moves))
	if failed > 0 {
		return fmt.Errorf("%d moves refused (above); run the command again to plan the rest",
			failed)
	}
	if !o.wait {
		fmt.Fprintln(stdout, "follow them with: sluice topic reassignments")
		return nil
	}
	return waitMoves(ctx, cl, moves, stdout)
}

// rebalanceInput reads every partition's replicas (of o.topics, or of every topic) and
// the brokers to spread them over. It refuses while a reassignment is in progress: the
// plan would count replicas that are about to leave.
func rebalanceInput(ctx context.Context, adm *kadm.Client, cl *kgo.Client,
	o rebalanceOptions) (
	[]controller.PartitionReplicas, []int32, error) {
	md, err := adm.Metadata(ctx, o.topics...)
	if err != nil {
		return nil, nil, friendly(err, "", "")
	}
	brokers := o.brokers
	if len(brokers) == 0 {
		for _, b := range md.Brokers {
			brokers = append(brokers, b.NodeID)
		}
	}
	var parts []controller.PartitionReplicas
	for _, td := range md.Topics.Sorted() {
		if td.Err != nil {
			return nil, nil, friendly(td.Err, td.Topic, "")
		}
		for _, p := range td.Partitions.Sorted() {
			parts = append(parts, controller.PartitionReplicas{Topic: td.Topic,
				Partition: p.Partition, Replicas: slices.Clone(p.Replicas)})
		}
	}
	inProgress, err := listReassignments(ctx, cl, nil)
	if err != nil {
		return nil, nil, friendly(err, "", "")
	}
	if n := countPartitions(inProgress.Topics); n > 0 {
		return nil, nil, fmt.Errorf("%d partitions are being reassigned: wait for them (sluice "+
			"topic reassignments) or cancel them before planning a rebalance", n)
	}
	return parts, brokers, nil
}

func countPartitions(topics []kmsg.ListPartitionReassignmentsResponseTopic) int {
	n := 0
	for _, t := range topics {
		n += len(t.Partitions)
	}
	return n
}

// printPlan prints each move and the replicas per broker before and after.
func printRebalancePlan(w io.Writer, parts []controller.PartitionReplicas, brokers []int32,
	moves []controller.Move) {
	before, after := map[int32]int{}, map[int32]int{}
	moved := map[string][]int32{}
	for _, m := range moves {
		moved[fmt.Sprint(m.Topic, "\x00", m.Partition)] = m.To
	}
	for _, p := range parts {
		to, ok := moved[fmt.Sprint(p.Topic, "\x00", p.Partition)]
		if !ok {
			to = p.Replicas
		}
		for _, r := range p.Replicas {
			before[r]++
		}
		for _, r := range to {
			after[r]++
		}
	}
	if len(moves) == 0 {
		fmt.Fprintf(w, "balanced already: %d partitions over brokers %s, nothing to move\n",
			len(parts), ids(brokers))
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TOPIC\tPARTITION\tREPLICAS\tTARGET")
		for _, m := range moves {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", m.Topic, m.Partition, ids(m.From), ids(m.To))
		}
		_ = tw.Flush()
	}
	all := slices.Clone(brokers)
	for id := range before {
		if !slices.Contains(all, id) {
			all = append(all, id)
		}
	}
	slices.Sort(all)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BROKER\tREPLICAS NOW\tAFTER")
	for _, id := range all {
		fmt.Fprintf(tw, "%d\t%d\t%d\n", id, before[id], after[id])
	}
	_ = tw.Flush()
}

// waitMoves polls until none of moves' partitions is being reassigned.
func waitMoves(ctx context.Context, cl *kgo.Client, moves []controller.Move,
	stdout io.Writer) error {
	topics := map[string][]int32{}
	for _, m := range moves {
		topics[m.Topic] = append(topics[m.Topic], m.Partition)
	}
	for {
		resp, err := listReassignments(ctx, cl, topics)
		if err != nil {
			return friendly(err, "", "")
		}
		left := countPartitions(resp.Topics)
		if left == 0 {
			fmt.Fprintf(stdout, "all %d moves complete\n", len(moves))
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d moves still in progress (the new replicas are "+
				"catching up); follow them with: sluice topic reassignments", left, len(moves))
		case <-time.After(250 * time.Millisecond):
		}
	}
}
