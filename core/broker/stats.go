package broker

import (
	"sort"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
)

// PartitionStats is one hosted partition's offsets and state, for the node's metrics.
type PartitionStats struct {
	TP            core.TopicPartition
	LogStart      int64
	HighWatermark int64
	LogEnd        int64
	Offline       bool
	InSync        int  // replicas in the ISR, the leader included
	Replicas      int  // replicas assigned to the partition (1 for an unassigned topic)
	Leader        bool // this node leads the partition
	LeaderEpoch   int32
	// PartitionEpoch is the metadata's partition epoch, which every change of leader,
	// ISR or replicas raises (0 for an unassigned topic).
	PartitionEpoch int32
}

// UnderReplicated says whether this node leads the partition and its ISR holds fewer
// replicas than are assigned, as Kafka's UnderReplicatedPartitions counts.
func (s PartitionStats) UnderReplicated() bool { return s.Leader && s.InSync < s.Replicas }

// PartitionStats returns every hosted partition's stats, by topic and partition. It
// reads and changes nothing; the driver calls it between steps (E5 holds: it is not a
// step, and no step runs meanwhile).
func (rm *replicaManager) PartitionStats() []PartitionStats {
	out := make([]PartitionStats, 0, len(rm.replicas))
	for tp, r := range rm.replicas {
		s := PartitionStats{TP: tp, LogStart: r.StartOffset(),
			HighWatermark: r.HighWatermark(), LogEnd: r.EndOffset(), Offline: r.Offline(),
			InSync: r.InSyncReplicas(), Replicas: 1, Leader: !r.Follower(),
			LeaderEpoch: r.LeaderEpoch()}
		if st, assigned, _ := rm.image.Partition(tp.Topic, tp.Partition); assigned {
			s.Replicas, s.PartitionEpoch = len(st.Replicas), st.PartitionEpoch
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TP.Less(out[j].TP) })
	return out
}

// BrokerStates counts the brokers registered in the metadata image by state
// ("fenced", "unfenced", "shutting-down"); empty before any registration.
func (b *Broker) BrokerStates() map[string]int {
	out := map[string]int{}
	for _, br := range b.image.Brokers() {
		out[br.State.String()]++
	}
	return out
}

// ReplicationStats counts, since the process started, the changes of committed
// partition state that concern this node as a leader: its ISRs shrinking and expanding
// (Kafka's IsrShrinksPerSec and IsrExpandsPerSec), and leaderships gained and lost.
// Records replayed at start are not counted. QuorumLeaderChanges counts the metadata
// quorum leaders this node heard of (each election it learnt of, its own start included;
// an unknown leader is not counted).
type ReplicationStats struct {
	ISRShrinks, ISRExpands             uint64
	LeadershipsGained, LeadershipsLost uint64
	QuorumLeaderChanges                uint64
}

// ReplicationStats returns the counters (a read between steps, as PartitionStats).
func (b *Broker) ReplicationStats() ReplicationStats { return b.replStats }

// countPartitionChange counts what a committed PartitionChange changed for this node,
// given the partition's state before it.
func (n *node) countPartitionChange(prev, next meta.PartitionState) {
	self := n.cfg.NodeID
	switch {
	case prev.Leader == self && next.Leader == self:
		if len(next.ISR) < len(prev.ISR) {
			n.replStats.ISRShrinks++
		} else if len(next.ISR) > len(prev.ISR) {
			n.replStats.ISRExpands++
		}
	case next.Leader == self:
		n.replStats.LeadershipsGained++
	case prev.Leader == self:
		n.replStats.LeadershipsLost++
	}
}
