package broker

import "github.com/sluicemq/sluice/core"

// GroupOffsetStats is one committed offset of a consumer group, with the partition's
// high-water mark when this node hosts the partition, for the node's metrics.
type GroupOffsetStats struct {
	Group         string
	TP            core.TopicPartition
	Committed     int64
	HighWatermark int64 // -1 when this node does not host the partition
}

// Lag is how many offsets the group is behind the high-water mark (0 when it committed
// past it, as after a truncation); false when this node does not host the partition.
func (g GroupOffsetStats) Lag() (int64, bool) {
	if g.HighWatermark < 0 {
		return 0, false
	}
	return max(g.HighWatermark-g.Committed, 0), true
}

// GroupOffsetStats returns every committed offset of every group this node
// coordinates, by group and partition. Like PartitionStats, the driver calls it
// between steps; it reads and changes nothing.
func (b *Broker) GroupOffsetStats() []GroupOffsetStats {
	c := b.groups.coord
	if c == nil {
		return nil
	}
	var out []GroupOffsetStats
	for _, id := range c.GroupIDs() {
		for _, o := range c.Offsets(id) {
			g := GroupOffsetStats{Group: id, TP: o.TP, Committed: o.Offset.Offset,
				HighWatermark: -1}
			if r := b.replicas[o.TP]; r != nil {
				g.HighWatermark = r.HighWatermark()
			}
			out = append(out, g)
		}
	}
	return out
}
