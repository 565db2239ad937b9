package broker

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// VersionRange is the inclusive range of versions served for one API key.
type VersionRange struct {
	Key      int16
	Min, Max int16
}

// SupportedVersions is what ApiVersions advertises, sorted by key. Only what the
// handlers implement is listed (kafka-compat.md): Produce advertises minimum 0 so that
// older librdkafka keeps compression on, and answers v0–v2 with UNSUPPORTED_VERSION;
// Fetch stops at 12 and Produce at 11 because later versions switch to topic IDs and
// KIP-890 transactions.
var SupportedVersions = []VersionRange{
	{int16(kmsg.Produce), 0, 11},
	{int16(kmsg.Fetch), 4, 12},
	{int16(kmsg.ListOffsets), 1, 7},
	{int16(kmsg.Metadata), 0, 12},
	{int16(kmsg.OffsetCommit), 0, 8},
	{int16(kmsg.OffsetFetch), 0, 8},
	{int16(kmsg.FindCoordinator), 0, 4},
	{int16(kmsg.JoinGroup), 0, 9},
	{int16(kmsg.Heartbeat), 0, 4},
	{int16(kmsg.LeaveGroup), 0, 5},
	{int16(kmsg.SyncGroup), 0, 5},
	{int16(kmsg.DescribeGroups), 0, 5},
	{int16(kmsg.ListGroups), 0, 5},
	{int16(kmsg.ApiVersions), 0, 3},
	{int16(kmsg.CreateTopics), 0, 7},
	{int16(kmsg.DeleteTopics), 0, 6},
	{int16(kmsg.DeleteRecords), 0, 2},
	{int16(kmsg.InitProducerID), 0, 4},
	{int16(kmsg.OffsetForLeaderEpoch), 0, 4},
	{int16(kmsg.DescribeConfigs), 0, 4},
	{int16(kmsg.AlterConfigs), 0, 2},
	{int16(kmsg.CreatePartitions), 0, 3},
	{int16(kmsg.DeleteGroups), 0, 2},
	{int16(kmsg.IncrementalAlterConfigs), 0, 1},
	{int16(kmsg.OffsetDelete), 0, 0},
	// Served by the node (runtime/describe_quorum.go), not by the broker actor.
	{int16(kmsg.DescribeQuorum), 0, 1},
	{int16(kmsg.DescribeCluster), 0, 1},
	// The controller's RPCs, served by the node's controller (runtime), not by the
	// broker actor.
	{int16(kmsg.BrokerRegistration), 0, 3},
	{int16(kmsg.BrokerHeartbeat), 0, 1},
	{int16(kmsg.AllocateProducerIDs), 0, 0},
}

// InterBrokerVersions lists the APIs only brokers send one another beyond
// SupportedVersions, served by the node (runtime: AlterPartition goes to its
// controller). They are kept apart from SupportedVersions, whose order the simulator's
// clients draw their versions in (a key added there shifts every later draw and changes
// every seed's trace); ApiVersions advertises both (AdvertisedVersions).
var InterBrokerVersions = []VersionRange{
	{int16(kmsg.AlterPartition), 0, 3},
	// Admin changes a node that is not the active controller forwards to the
	// controller's node (KIP-590; envelope.go).
	{int16(kmsg.Envelope), 0, 0},
}

// SecurityVersions lists the security and quota APIs, kept apart from
// SupportedVersions for the same reason as InterBrokerVersions. SaslHandshake and
// SaslAuthenticate are served by the wire layer (net/sasl*.go), before and during
// authentication; the SCRAM credential APIs, the client quota APIs (KIP-546) and the
// ACL APIs by the broker.
var SecurityVersions = []VersionRange{
	{int16(kmsg.SASLHandshake), 0, 1},
	{int16(kmsg.SASLAuthenticate), 0, 2},
	{int16(kmsg.DescribeUserSCRAMCredentials), 0, 0},
	{int16(kmsg.AlterUserSCRAMCredentials), 0, 0},
	{int16(kmsg.DescribeClientQuotas), 0, 1},
	{int16(kmsg.AlterClientQuotas), 0, 1},
	{int16(kmsg.DescribeACLs), 0, 3},
	{int16(kmsg.CreateACLs), 0, 3},
	{int16(kmsg.DeleteACLs), 0, 3},
}

// ReassignmentVersions lists the partition reassignment APIs (KIP-455), served by the
// broker on the active controller's node, and UnregisterBroker, which any node
// forwards to the active controller; kept apart from SupportedVersions for the same
// reason as InterBrokerVersions.
var ReassignmentVersions = []VersionRange{
	{int16(kmsg.ElectLeaders), 0, 2},
	{int16(kmsg.AlterPartitionAssignments), 0, 1},
	{int16(kmsg.ListPartitionReassignments), 0, 0},
	{int16(kmsg.UnregisterBroker), 0, 0},
}

// OperatorVersions lists the APIs operator tools read a node's state with
// (kafka-log-dirs.sh, kafka-transactions.sh describe-producers, kadm, web consoles):
// each node answers for the partitions it hosts. Kept apart from SupportedVersions for
// the same reason as InterBrokerVersions; the simulator's clients do not send them.
var OperatorVersions = []VersionRange{
	{int16(kmsg.DescribeLogDirs), 0, 4},
	{int16(kmsg.DescribeProducers), 0, 0},
}

// AdvertisedVersions is what ApiVersions lists: SupportedVersions,
// InterBrokerVersions, SecurityVersions, ReassignmentVersions and OperatorVersions,
// sorted by key.
func AdvertisedVersions() []VersionRange {
	out := append(slices.Clone(SupportedVersions), InterBrokerVersions...)
	out = append(out, SecurityVersions...)
	out = append(out, ReassignmentVersions...)
	out = append(out, OperatorVersions...)
	slices.SortStableFunc(out, func(a, b VersionRange) int { return int(a.Key) - int(b.Key) })
	return out
}

// ProduceMinBatchVersion is the first Produce version that carries v2 record batches.
const ProduceMinBatchVersion = 3

// VersionFor returns the served range of key, and false when the key is not served.
func VersionFor(key int16) (VersionRange, bool) {
	for _, list := range [][]VersionRange{SupportedVersions, InterBrokerVersions,
		SecurityVersions, ReassignmentVersions, OperatorVersions} {
		for _, v := range list {
			if v.Key == key {
				return v, true
			}
		}
	}
	return VersionRange{}, false
}
