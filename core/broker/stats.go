package broker

import (
	"sort"

	"github.com/sluicemq/sluice/core"
)

// PartitionStats is one hosted partition's offsets and state, for the node's metrics.
type PartitionStats struct {
	TP            core.TopicPartition
	LogStart      int64
	HighWatermark int64
	LogEnd        int64
	Offline       bool
	InSync        int // replicas in the ISR, the leader included
}

// PartitionStats returns every hosted partition's stats, by topic and partition. It
// reads and changes nothing; the driver calls it between steps (E5 holds: it is not a
// step, and no step runs meanwhile).
func (rm *replicaManager) PartitionStats() []PartitionStats {
	out := make([]PartitionStats, 0, len(rm.replicas))
	for tp, r := range rm.replicas {
		out = append(out, PartitionStats{TP: tp, LogStart: r.StartOffset(),
			HighWatermark: r.HighWatermark(), LogEnd: r.EndOffset(), Offline: r.Offline(),
			InSync: r.InSyncReplicas()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TP.Less(out[j].TP) })
	return out
}
