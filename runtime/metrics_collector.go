package runtime

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicemq/sluice/core/broker"
)

// flowCollector exports, at each scrape, what the node keeps as plain values: the
// partitions' state beyond their offsets (httpops.go has those), consumer group
// offsets and lag, client traffic per topic, and connection totals. Everything owned
// by the stepping goroutine is read under stepMu, in one critical section.
type flowCollector struct {
	n                                        *Node
	lastStable, size, underReplicated, leads *prometheus.Desc
	committed, lag                           *prometheus.Desc
	bytesIn, recordsIn, bytesOut, recordsOut *prometheus.Desc
	connsOpened, connsClosed, quorumTerm     *prometheus.Desc
	leaderEpoch, partitionEpoch, brokers     *prometheus.Desc
	metaApplied, quorumCommit, quorumApplied *prometheus.Desc
	isrShrinks, isrExpands, gained, lost     *prometheus.Desc
	leaderChanges, ctlActive                 *prometheus.Desc
}

func (n *Node) newFlowCollector() *flowCollector {
	tp := []string{"topic", "partition"}
	gtp := []string{"group", "topic", "partition"}
	topic := []string{"topic"}
	d := prometheus.NewDesc
	return &flowCollector{n: n,
		lastStable: d("sluice_partition_last_stable_offset",
			"Offset below which no transaction is open: the high-water mark (no "+
				"transactions yet).", tp, nil),
		size: d("sluice_partition_size_bytes",
			"Bytes of the partition's log segments on disk.", tp, nil),
		underReplicated: d("sluice_partition_under_replicated",
			"1 when this node leads the partition and its ISR is smaller than its "+
				"replica set.", tp, nil),
		leads: d("sluice_partition_leader",
			"1 when this node leads the partition, 0 when it follows.", tp, nil),
		committed: d("sluice_group_committed_offset",
			"A consumer group's committed offset on a partition.", gtp, nil),
		lag: d("sluice_group_lag",
			"High-water mark minus the group's committed offset (0 when past it); only "+
				"for partitions this node hosts.", gtp, nil),
		bytesIn: d("sluice_topic_bytes_in_total",
			"Bytes of record batches clients produced to the topic and this node "+
				"appended.", topic, nil),
		recordsIn: d("sluice_topic_records_in_total",
			"Records clients produced to the topic and this node appended.", topic, nil),
		bytesOut: d("sluice_topic_bytes_out_total",
			"Bytes of record batches this node sent to consumers fetching the topic.",
			topic, nil),
		recordsOut: d("sluice_topic_records_out_total",
			"Records in the batches this node sent to consumers fetching the topic.",
			topic, nil),
		connsOpened: d("sluice_connections_opened_total",
			"Client connections accepted (not those a connection cap closed at once).",
			nil, nil),
		connsClosed: d("sluice_connections_closed_total",
			"Accepted client connections that have closed.", nil, nil),
		quorumTerm: d("sluice_quorum_term",
			"The metadata quorum's current raft term (only with a quorum).", nil, nil),
		quorumCommit: d("sluice_quorum_commit_index",
			"Index of the last raft log entry known committed (only with a quorum).",
			nil, nil),
		quorumApplied: d("sluice_quorum_applied_index",
			"Index of the last raft log entry applied here (only with a quorum).", nil, nil),
		metaApplied: d("sluice_metadata_applied_index",
			"Index of the last metadata record the broker applied to its image.", nil, nil),
		leaderEpoch: d("sluice_partition_leader_epoch",
			"The partition's leader epoch on this node; it rises at every leader election.",
			tp, nil),
		partitionEpoch: d("sluice_partition_epoch",
			"The metadata's partition epoch; it rises at every change of leader, ISR or "+
				"replicas (0 for a topic without replica placement).", tp, nil),
		brokers: d("sluice_brokers",
			"Brokers registered in the metadata, by state (fenced, unfenced, "+
				"shutting-down).", []string{"state"}, nil),
		isrShrinks: d("sluice_isr_shrinks_total",
			"Committed ISR changes that shrank the ISR of a partition this node leads.",
			nil, nil),
		isrExpands: d("sluice_isr_expands_total",
			"Committed ISR changes that grew the ISR of a partition this node leads.",
			nil, nil),
		gained: d("sluice_leaderships_gained_total",
			"Partition changes that made this node a partition's leader (an election).",
			nil, nil),
		lost: d("sluice_leaderships_lost_total",
			"Partition changes that took a partition's leadership from this node.", nil, nil),
		leaderChanges: d("sluice_quorum_leader_changes_total",
			"Metadata quorum leaders this node learnt of since it started (elections).",
			nil, nil),
		ctlActive: d("sluice_controller_active",
			"1 while this node's controller is the active one (it leads the metadata "+
				"quorum, or the node has none); summed over the cluster it should be 1.",
			nil, nil),
	}
}

func (c *flowCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.lastStable, c.size, c.underReplicated, c.leads,
		c.committed, c.lag, c.bytesIn, c.recordsIn, c.bytesOut, c.recordsOut,
		c.connsOpened, c.connsClosed, c.quorumTerm, c.quorumCommit, c.quorumApplied,
		c.metaApplied, c.leaderEpoch, c.partitionEpoch, c.brokers, c.isrShrinks,
		c.isrExpands, c.gained, c.lost, c.leaderChanges, c.ctlActive} {
		ch <- d
	}
}

// flowSnapshot is what one scrape copies out under stepMu.
type flowSnapshot struct {
	parts   []broker.PartitionStats
	sizes   []int64 // by parts' index; -1 when the log is not open here
	groups  []broker.GroupOffsetStats
	traffic map[string]topicTraffic
	brokers map[string]int
	applied uint64
	repl    broker.ReplicationStats
	active  bool // this node's controller is the active one
}

func (c *flowCollector) snapshot() flowSnapshot {
	n := c.n
	n.stepMu.Lock()
	defer n.stepMu.Unlock()
	s := flowSnapshot{parts: n.b.PartitionStats(), groups: n.b.GroupOffsetStats(),
		traffic: map[string]topicTraffic{}, brokers: n.b.BrokerStates(),
		applied: n.b.MetaIndex(), repl: n.b.ReplicationStats()}
	s.active = n.cl == nil || n.cl.h.Controller().Active() // a node without a quorum is its own controller
	hosted := make(map[string]bool, len(s.parts))
	s.sizes = make([]int64, len(s.parts))
	for i, p := range s.parts {
		hosted[p.TP.Topic] = true
		s.sizes[i] = -1
		if l := n.logs[p.TP]; l != nil {
			var size int64
			for _, seg := range l.Segments() {
				size += seg.SizeBytes
			}
			s.sizes[i] = size
		}
	}
	if n.flow != nil {
		n.flow.forgetTopics(hosted)
		for name, t := range n.flow.topics {
			s.traffic[name] = *t
		}
	}
	return s
}

func (c *flowCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.snapshot()
	metric := func(d *prometheus.Desc, t prometheus.ValueType, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, t, v, l...)
	}
	for i, p := range s.parts {
		l := []string{p.TP.Topic, strconv.Itoa(int(p.TP.Partition))}
		metric(c.lastStable, prometheus.GaugeValue, float64(p.HighWatermark), l...)
		if s.sizes[i] >= 0 {
			metric(c.size, prometheus.GaugeValue, float64(s.sizes[i]), l...)
		}
		metric(c.underReplicated, prometheus.GaugeValue, boolValue(p.UnderReplicated()), l...)
		metric(c.leads, prometheus.GaugeValue, boolValue(p.Leader), l...)
		metric(c.leaderEpoch, prometheus.GaugeValue, float64(p.LeaderEpoch), l...)
		metric(c.partitionEpoch, prometheus.GaugeValue, float64(p.PartitionEpoch), l...)
	}
	for state, count := range s.brokers {
		metric(c.brokers, prometheus.GaugeValue, float64(count), state)
	}
	metric(c.metaApplied, prometheus.GaugeValue, float64(s.applied))
	metric(c.isrShrinks, prometheus.CounterValue, float64(s.repl.ISRShrinks))
	metric(c.isrExpands, prometheus.CounterValue, float64(s.repl.ISRExpands))
	metric(c.gained, prometheus.CounterValue, float64(s.repl.LeadershipsGained))
	metric(c.lost, prometheus.CounterValue, float64(s.repl.LeadershipsLost))
	metric(c.leaderChanges, prometheus.CounterValue, float64(s.repl.QuorumLeaderChanges))
	metric(c.ctlActive, prometheus.GaugeValue, boolValue(s.active))
	for _, g := range s.groups {
		l := []string{g.Group, g.TP.Topic, strconv.Itoa(int(g.TP.Partition))}
		metric(c.committed, prometheus.GaugeValue, float64(g.Committed), l...)
		if lag, ok := g.Lag(); ok {
			metric(c.lag, prometheus.GaugeValue, float64(lag), l...)
		}
	}
	for name, t := range s.traffic {
		metric(c.bytesIn, prometheus.CounterValue, float64(t.bytesIn), name)
		metric(c.recordsIn, prometheus.CounterValue, float64(t.recordsIn), name)
		metric(c.bytesOut, prometheus.CounterValue, float64(t.bytesOut), name)
		metric(c.recordsOut, prometheus.CounterValue, float64(t.recordsOut), name)
	}
	st := c.n.srv.Stats()
	metric(c.connsOpened, prometheus.CounterValue, float64(st.ConnsOpened))
	metric(c.connsClosed, prometheus.CounterValue, float64(st.ConnsClosed))
	if c.n.quorum != nil {
		_, term := c.n.quorum.Leader()
		metric(c.quorumTerm, prometheus.GaugeValue, float64(term))
		r := c.n.quorum.Raft()
		metric(c.quorumCommit, prometheus.GaugeValue, float64(r.CommitIndex()))
		metric(c.quorumApplied, prometheus.GaugeValue, float64(r.AppliedIndex()))
	}
}

// registerFlowMetrics adds the series of this file, metrics_flow.go and
// metrics_requests.go to reg.
func (n *Node) registerFlowMetrics(reg *prometheus.Registry) {
	reg.MustRegister(n.newFlowCollector())
	if n.requests != nil {
		reg.MustRegister(n.requests.total, n.requests.latency)
	}
	if n.flow != nil {
		reg.MustRegister(n.flow.stages, n.flow.batchRecords, n.flow.batchBytes)
	}
}
