package broker

import (
	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/replica"
)

// HostedReplica returns the replica of tp this broker hosts (nil when none), for a
// driver's checks between steps: the simulator compares the replicas of every
// partition at the end of a run. The caller must not change it.
func (b *Broker) HostedReplica(tp core.TopicPartition) *replica.Replica {
	return b.replicas[tp]
}
