package main

// `sluice bench cluster`: the cluster figures of issue 8. It starts N `sluice node`
// processes on 127.0.0.1 (as `sluice dev --nodes N` does, with every default setting),
// measures acks=all produce throughput with replication factor N, then failover: kill -9
// of a partition leader (never the active controller, so the figure is the partition's
// failover and not a quorum election) and controlled shutdown (SIGTERM), each time from
// the signal to the producer's next acknowledged write, restarting the node and waiting
// for full ISRs between rounds.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type clusterBench struct {
	exe      string
	nodes    int
	children []*devChild
	cl       *kgo.Client // the failover step's admin client (pick asks each node with it)
	logs     io.Writer
	out      sync.Mutex // one writer at a time on logs
}

type clusterBenchOpts struct {
	benchOpts
	nodes, basePort    int
	kills, shutdowns   int
	controllerKills    int
	data, logFile      string
	roundBound         time.Duration
	metadataMinAge     time.Duration
	throughput         bool
	failoverPartitions int
}

func runBenchCluster(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench cluster", "sluice bench cluster [--nodes N] [--kills K] "+
		"[--shutdowns S] [--records N] [--steps S,...] [--data DIR] [--log FILE]", stderr)
	var o clusterBenchOpts
	fs.IntVar(&o.nodes, "nodes", 3, "node processes (and replication factor), 2..9")
	fs.IntVar(&o.basePort, "base-port", 19200, "Kafka listeners from this port; quorum +100")
	fs.IntVar(&o.kills, "kills", 10, "kill -9 rounds of a partition leader")
	fs.IntVar(&o.shutdowns, "shutdowns", 10, "controlled shutdown (SIGTERM) rounds")
	fs.IntVar(&o.controllerKills, "controller-kills", 3, "kill -9 rounds of the active controller")
	fs.StringVar(&o.data, "data", "", "folder for the nodes' data (default: a temporary one)")
	fs.StringVar(&o.logFile, "log", "", "file for the nodes' logs (default: discarded)")
	fs.IntVar(&o.records, "records", 200_000, "records per produce step")
	fs.IntVar(&o.size, "size", 1024, "record value bytes")
	fs.IntVar(&o.partitions, "partitions", 4, "partitions of each throughput topic")
	fs.DurationVar(&o.maxTime, "max-time", 60*time.Second, "time bound per produce step")
	fs.DurationVar(&o.roundBound, "round-bound", 90*time.Second, "time bound per failover round")
	fs.DurationVar(&o.metadataMinAge, "metadata-min-age", 250*time.Millisecond,
		"the prober's kgo.MetadataMinAge (franz-go's default, 5s, would dominate failover)")
	fs.StringVar(&o.steps, "steps", "acks1_p1,acksall_p1,acksall_p4",
		"throughput steps, as for sluice bench (empty: none)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if o.nodes < 2 || o.nodes > 9 || o.kills < 0 || o.shutdowns < 0 || o.controllerKills < 0 ||
		o.records <= 0 || o.size <= 0 || o.partitions <= 0 {
		fmt.Fprintln(stderr, "bench cluster: --nodes must be 2..9; counts must not be negative")
		return 2
	}
	o.failoverPartitions = o.nodes
	return runUntilSignal("bench cluster", stderr, func(ctx context.Context) error {
		return benchCluster(ctx, o, stdout)
	})
}

func benchCluster(ctx context.Context, o clusterBenchOpts, out io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if o.data == "" {
		if o.data, err = os.MkdirTemp("", "sluice-bench-cluster-"); err != nil {
			return err
		}
		defer os.RemoveAll(o.data)
	} else if o.data, err = filepath.Abs(o.data); err != nil {
		return err
	}
	cb := &clusterBench{exe: exe, nodes: o.nodes, logs: io.Discard}
	if o.logFile != "" {
		f, err := os.Create(o.logFile)
		if err != nil {
			return err
		}
		defer f.Close()
		cb.logs = f
	}
	defer func() { stopDevChildren(cb.children, cb.logs, &cb.out) }()
	if err := cb.start(ctx, o); err != nil {
		return err
	}
	o.bootstrap = cb.bootstrap()
	fmt.Fprintf(out, "CONTEXT cluster_nodes=%d replication_factor=%d min_insync=2 "+
		"session_timeout_ms=default\n", o.nodes, o.nodes)
	if o.steps != "" {
		bo := o.benchOpts
		bo.replication, bo.label = int16(o.nodes), fmt.Sprintf("cluster%d_", o.nodes)
		if err := benchRun(ctx, bo, out); err != nil {
			return err
		}
	}
	for _, r := range []struct {
		kind   string
		rounds int
	}{{"kill9", o.kills}, {"shutdown", o.shutdowns}, {"kill9_controller", o.controllerKills}} {
		if r.rounds == 0 {
			continue
		}
		if err := cb.failover(ctx, o, r.kind, r.rounds, out); err != nil {
			return fmt.Errorf("failover %s: %w", r.kind, err)
		}
	}
	return nil
}

// start runs the nodes and waits until each lists every broker.
func (cb *clusterBench) start(ctx context.Context, o clusterBenchOpts) error {
	for id := 1; id <= o.nodes; id++ {
		ch := &devChild{id: id, kafka: fmt.Sprintf("127.0.0.1:%d", o.basePort+id-1),
			args: devClusterArgs(id, o.nodes, o.basePort, o.data, "info")}
		if err := ch.start(cb.exe, cb.logs, &cb.out); err != nil {
			return fmt.Errorf("node %d: %w", id, err)
		}
		cb.children = append(cb.children, ch)
	}
	for _, ch := range cb.children {
		if err := ch.awaitListening(ctx, 60*time.Second); err != nil {
			return fmt.Errorf("node %d: %w", ch.id, err)
		}
	}
	return awaitDevClusterReady(ctx, cb.children, 60*time.Second)
}

func (cb *clusterBench) bootstrap() string {
	addrs := make([]string, len(cb.children))
	for i, ch := range cb.children {
		addrs[i] = ch.kafka
	}
	return strings.Join(addrs, ",")
}

// failover runs rounds of one kind and prints their figure.
func (cb *clusterBench) failover(ctx context.Context, o clusterBenchOpts, kind string,
	rounds int, out io.Writer) error {
	topic := fmt.Sprintf("bench-failover-%s-%d", kind, time.Now().UnixNano())
	// A node restarted by the previous kind's last round is placed on only once unfenced.
	if err := awaitDevClusterReady(ctx, cb.children, o.roundBound); err != nil {
		return err
	}
	adm, cl, err := cb.admin()
	if err != nil {
		return err
	}
	defer cl.Close()
	cb.cl = cl
	if err := cb.createFailoverTopic(ctx, o, adm, topic); err != nil {
		return err
	}
	pr, err := startProber(ctx, cb.bootstrap(), topic, o.metadataMinAge)
	if err != nil {
		return err
	}
	defer pr.stop()
	var took []time.Duration
	for i := 0; i < rounds; i++ {
		d, err := cb.round(ctx, o, adm, pr, topic, kind)
		if err != nil {
			return fmt.Errorf("round %d: %w", i+1, err)
		}
		took = append(took, d)
	}
	slices.Sort(took)
	fmt.Fprintf(out, "FIGURE system=sluice test=failover_%s nodes=%d rounds=%d p50_ms=%d "+
		"max_ms=%d min_ms=%d\n", kind, o.nodes, len(took),
		took[len(took)/2].Milliseconds(), took[len(took)-1].Milliseconds(),
		took[0].Milliseconds())
	return nil
}

// round waits for full ISRs and a steady producer, signals the chosen leader, measures
// the time to the producer's next acknowledged write, and restarts the node.
func (cb *clusterBench) round(ctx context.Context, o clusterBenchOpts, adm *kadm.Client,
	pr *prober, topic, kind string) (time.Duration, error) {
	rctx, cancel := context.WithTimeout(ctx, o.roundBound)
	defer cancel()
	part, leader, err := cb.awaitSteady(rctx, adm, topic, kind)
	if err != nil {
		return 0, err
	}
	pr.target(part)
	if _, err := pr.ackAfter(rctx, time.Now()); err != nil {
		return 0, fmt.Errorf("no acknowledgement before the fault: %w", err)
	}
	ch := cb.children[leader-1]
	sig := syscall.SIGKILL
	if kind == "shutdown" {
		sig = syscall.SIGTERM
	}
	t0 := time.Now()
	if err := ch.cmd.Process.Signal(sig); err != nil {
		return 0, err
	}
	d, err := pr.ackAfter(rctx, t0)
	if err != nil {
		return 0, fmt.Errorf("no acknowledgement after %s of node %d: %w", kind, leader, err)
	}
	select {
	case <-ch.done:
	case <-rctx.Done():
		return 0, fmt.Errorf("node %d did not exit after %v", leader, sig)
	}
	if err := ch.start(cb.exe, cb.logs, &cb.out); err != nil {
		return 0, err
	}
	if err := ch.awaitListening(rctx, o.roundBound); err != nil {
		return 0, err
	}
	return d, nil
}

// awaitSteady waits until every partition of topic has a full ISR and picks the
// partition to fault and its leader: for kill9 and shutdown a partition led by a node
// other than the active controller; for kill9_controller one the controller leads.
func (cb *clusterBench) awaitSteady(ctx context.Context, adm *kadm.Client, topic,
	kind string) (int32, int32, error) {
	for {
		part, leader, full := cb.pick(ctx, adm, topic, kind)
		if part >= 0 {
			return part, leader, nil
		}
		if full > 0 {
			// Every ISR is full but no partition has the leader this kind needs (after a
			// restart the controller may lead them all until the periodic rebalance,
			// minutes away): move leaders back to their preferred replicas now.
			set := kadm.TopicsSet{}
			for p := int32(0); p < int32(full); p++ {
				set.Add(topic, p)
			}
			ectx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, _ = adm.ElectLeaders(ectx, kadm.ElectPreferredReplica, set)
			cancel()
		}
		select {
		case <-ctx.Done():
			return 0, 0, fmt.Errorf("the ISRs of %s did not fill up: %w", topic, ctx.Err())
		case <-time.After(200 * time.Millisecond): // polling, bounded by ctx
		}
	}
}

// pick returns the partition to fault and its leader (part -1 when none fits yet), and
// the number of partitions of topic when every one is led with a full ISR (else 0). It
// asks every node and trusts an answer only when all agree: a node restarted a moment
// ago answers from the metadata it recovered, and a round that killed the leader such a
// node still named would time nothing (its "failover" took 3 ms).
func (cb *clusterBench) pick(ctx context.Context, adm *kadm.Client, topic,
	kind string) (part, leader int32, full int) {
	mctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var first []kadm.PartitionDetail
	controller := int32(-1)
	for _, ch := range cb.children {
		parts, ctl, ok := nodeView(mctx, cb.cl, int32(ch.id), topic, cb.nodes)
		if !ok {
			return -1, -1, 0
		}
		if first == nil {
			first, controller = parts, ctl
		} else if !samePartitions(first, parts) {
			return -1, -1, 0
		}
	}
	return pickPartition(first, controller, cb.nodes, kind, len(cb.children))
}

// nodeView asks node id alone for topic's metadata: its partitions in order and the
// controller it names; false unless it lists every node and the topic without error.
func nodeView(ctx context.Context, cl *kgo.Client, id int32, topic string,
	nodes int) ([]kadm.PartitionDetail, int32, bool) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
	if err != nil || len(resp.Brokers) != nodes || len(resp.Topics) != 1 ||
		resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) == 0 {
		return nil, -1, false
	}
	var parts []kadm.PartitionDetail
	for _, p := range resp.Topics[0].Partitions {
		parts = append(parts, kadm.PartitionDetail{Topic: topic, Partition: p.Partition,
			Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, ISR: p.ISR,
			Err: kerr.ErrorForCode(p.ErrorCode)})
	}
	slices.SortFunc(parts, func(a, b kadm.PartitionDetail) int {
		return int(a.Partition - b.Partition)
	})
	return parts, resp.ControllerID, true
}

// pickPartition chooses, among partitions all led with a full ISR of nodes members, the
// first whose leader is the controller (kind kill9_controller) or is not (other kinds).
// full is len(parts) when every partition is led with a full ISR, else 0.
func pickPartition(parts []kadm.PartitionDetail, controller int32, nodes int, kind string,
	children int) (part, leader int32, full int) {
	part, leader = -1, -1
	for _, p := range parts {
		if p.Err != nil || len(p.ISR) != nodes || p.Leader < 1 {
			return -1, -1, 0
		}
		isCtl := p.Leader == controller
		if part < 0 && isCtl == (kind == "kill9_controller") && int(p.Leader) <= children {
			part, leader = p.Partition, p.Leader
		}
	}
	return part, leader, len(parts)
}

// samePartitions says whether two nodes' views of a topic name the same leaders, leader
// epochs and ISRs.
func samePartitions(a, b []kadm.PartitionDetail) bool {
	return slices.EqualFunc(a, b, func(x, y kadm.PartitionDetail) bool {
		return x.Partition == y.Partition && x.Leader == y.Leader &&
			x.LeaderEpoch == y.LeaderEpoch && slices.Equal(x.ISR, y.ISR)
	})
}

func (cb *clusterBench) admin() (*kadm.Client, *kgo.Client, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(cb.bootstrap(), ",")...),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.RequestRetries(2))
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl, nil
}

// createFailoverTopic creates the round's topic with a replica on every node. A node the
// previous round restarted may be listed before the controller unfenced it, and a
// topic is placed on unfenced brokers only: INVALID_REPLICATION_FACTOR is retried
// until the round's bound.
func (cb *clusterBench) createFailoverTopic(ctx context.Context, o clusterBenchOpts,
	adm *kadm.Client, topic string) error {
	ctx, cancel := context.WithTimeout(ctx, o.roundBound)
	defer cancel()
	for {
		cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
		resp, err := adm.CreateTopic(cctx, int32(o.failoverPartitions), int16(o.nodes),
			map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
		ccancel()
		if err == nil {
			err = resp.Err
		}
		if err == nil {
			return nil
		}
		if !errors.Is(err, kerr.InvalidReplicationFactor) {
			return fmt.Errorf("create %s: %w", topic, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("create %s: %w (a node still fenced)", topic, err)
		case <-time.After(200 * time.Millisecond): // polling, bounded by ctx
		}
	}
}
