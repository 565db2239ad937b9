package main

// `sluice cluster describe`: the cluster id, the metadata quorum with its leader and each
// voter's lag, and every live broker, from DescribeCluster and DescribeQuorum.
// `sluice cluster unregister --id N`: remove a dead broker (UnregisterBroker).

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register("cluster", command{
		summary: "describe the cluster (quorum, controller, brokers); unregister a dead broker",
		run:     runCluster,
	})
}

func runCluster(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || isHelp(args[0]) {
		fmt.Fprintln(stderr, "usage: sluice cluster describe|unregister [flags]\n\n"+
			"actions:\n  describe    show the cluster id, the metadata quorum (leader, epoch, "+
			"each voter's lag) and every live broker\n"+
			"  unregister  --id N: remove dead broker N (not a voter, fenced, hosting no "+
			"replica) from the cluster's metadata and the quorum's non-voters")
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "unregister" {
		return exitStatus("sluice cluster unregister",
			clusterUnregister(args[1:], stdout, stderr), stderr)
	}
	if args[0] != "describe" {
		fmt.Fprintf(stderr, "sluice cluster: unknown action %q (want describe or "+
			"unregister)\n", args[0])
		return 2
	}
	return exitStatus("sluice cluster describe", clusterDescribe(args[1:], stdout, stderr),
		stderr)
}

// clusterView is what `sluice cluster describe` prints.
type clusterView struct {
	cluster *kmsg.DescribeClusterResponse
	quorum  *kmsg.DescribeQuorumResponseTopicPartition
}

func clusterDescribe(args []string, stdout, stderr io.Writer) error {
	var cf clientFlags
	fs := newFlagSet("sluice cluster describe", "sluice cluster describe", stderr)
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
	v, err := describeCluster(ctx, cl)
	if err != nil {
		return friendly(err, "", "")
	}
	return printCluster(stdout, v)
}

// describeCluster asks any broker for the cluster, then the controller it names for
// the quorum: only the quorum's leader knows how far each voter is.
func describeCluster(ctx context.Context, cl *kgo.Client) (clusterView, error) {
	dc, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
	if err != nil {
		return clusterView{}, err
	}
	if err := kerr.ErrorForCode(dc.ErrorCode); err != nil {
		return clusterView{}, fmt.Errorf("DescribeCluster: %w", err)
	}
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = "__cluster_metadata"
	p := kmsg.NewDescribeQuorumRequestTopicPartition()
	t.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{p}
	req.Topics = []kmsg.DescribeQuorumRequestTopic{t}
	raw, err := cl.Broker(int(dc.ControllerID)).Request(ctx, req)
	if err != nil {
		return clusterView{}, fmt.Errorf("DescribeQuorum to the controller (node %d): %w",
			dc.ControllerID, err)
	}
	dq := raw.(*kmsg.DescribeQuorumResponse)
	if err := kerr.ErrorForCode(dq.ErrorCode); err != nil { // a refusal has no topics
		return clusterView{}, fmt.Errorf("DescribeQuorum (node %d): %w", dc.ControllerID, err)
	}
	if len(dq.Topics) != 1 || len(dq.Topics[0].Partitions) != 1 {
		return clusterView{}, fmt.Errorf("DescribeQuorum: malformed answer")
	}
	qp := &dq.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(qp.ErrorCode); err != nil {
		return clusterView{}, fmt.Errorf("DescribeQuorum (node %d, leader %d): %w",
			dc.ControllerID, qp.LeaderID, err)
	}
	return clusterView{cluster: dc, quorum: qp}, nil
}

func printCluster(w io.Writer, v clusterView) error {
	q := v.quorum
	fmt.Fprintf(w, "cluster id:   %s\ncontroller:   %d\n", v.cluster.ClusterID,
		v.cluster.ControllerID)
	fmt.Fprintf(w, "quorum:       leader %d, epoch %d, high-water mark %d\n\n", q.LeaderID,
		q.LeaderEpoch, q.HighWatermark)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REPLICA\tROLE\tLOG END\tLAG\tLAST CONTACT (ms ago)")
	row := func(s kmsg.DescribeQuorumResponseTopicPartitionReplicaState, role string) {
		end, lag, ago := "?", "?", "?"
		if s.LogEndOffset >= 0 {
			end = fmt.Sprint(s.LogEndOffset)
			lag = fmt.Sprint(max(q.HighWatermark-s.LogEndOffset, 0))
		}
		if s.LastFetchTimestamp >= 0 {
			ago = fmt.Sprint(max(nowMillis()-s.LastFetchTimestamp, 0))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", s.ReplicaID, role, end, lag, ago)
	}
	for _, s := range q.CurrentVoters {
		role := "voter"
		if s.ReplicaID == q.LeaderID {
			role = "voter (leader)"
		}
		row(s, role)
	}
	for _, s := range q.Observers {
		row(s, "observer")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BROKER\tADDRESS\tRACK\tSTATE")
	for _, b := range v.cluster.Brokers {
		rack := "-"
		if b.Rack != nil {
			rack = *b.Rack
		}
		fmt.Fprintf(tw, "%d\t%s:%d\t%s\t%s\n", b.NodeID, b.Host, b.Port, rack, "live")
	}
	return tw.Flush()
}

// nowMillis is the wall clock in ms since the epoch, the unit of DescribeQuorum's
// timestamps.
func nowMillis() int64 { return time.Now().UnixMilli() }
