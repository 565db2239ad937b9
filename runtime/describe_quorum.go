package runtime

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/broker"
)

// DescribeQuorum (key 55) describes the metadata quorum as KRaft's topic-partition
// __cluster_metadata-0. It is answered by the node, not the broker actor: the quorum is
// the node's adapter. The active controller answers with the leader (itself), the
// leader epoch (raft's term), the high-water mark (the last metadata index it
// applied, which on the leader is committed) and, per voter and per other registered
// broker (an observer), the index its last heartbeat said it applied and when
// (docs/controller.md, "Broker lifecycle"). Another node answers
// NOT_LEADER_OR_FOLLOWER naming the leader it knows. A node with its own metadata log
// is a quorum of one.

// metadataTopic is the name KRaft gives the metadata log.
const metadataTopic = "__cluster_metadata"

// answerDescribeQuorum answers r when it is a DescribeQuorum; false otherwise.
func (n *Node) answerDescribeQuorum(r broker.Request) bool {
	m, ok := r.Msg.(*kmsg.DescribeQuorumRequest)
	if !ok {
		return false
	}
	resp := m.ResponseKind().(*kmsg.DescribeQuorumResponse)
	resp.SetVersion(m.Version)
	if !n.b.AuthorizedClusterDescribe(r) { // DESCRIBE on the cluster, as Kafka asks
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		n.replier.Reply(broker.Reply{Conn: r.Conn, ID: r.ID, Msg: resp})
		return true
	}
	for _, t := range m.Topics {
		rt := kmsg.NewDescribeQuorumResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeQuorumResponseTopicPartition()
			rp.Partition = p.Partition
			if t.Topic != metadataTopic || p.Partition != 0 {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				n.describeQuorum(&rp)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	n.replier.Reply(broker.Reply{Conn: r.Conn, ID: r.ID, Msg: resp})
	return true
}

func (n *Node) describeQuorum(rp *kmsg.DescribeQuorumResponseTopicPartition) {
	self := n.opts.Config.NodeID
	state := func(id int32, end int64, atMs int64) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
		s := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		s.ReplicaID, s.LogEndOffset = id, end
		s.LastFetchTimestamp, s.LastCaughtUpTimestamp = atMs, -1
		return s
	}
	if n.cl == nil {
		end := int64(n.b.MetaIndex())
		rp.LeaderID, rp.LeaderEpoch, rp.HighWatermark = self, 1, end
		rp.CurrentVoters = append(rp.CurrentVoters, state(self, end, n.now().Millis()))
		return
	}
	leader, term := n.quorum.Leader()
	rp.LeaderID, rp.LeaderEpoch = leader, int32(min(term, 1<<31-1))
	if !n.cl.h.Controller().Active() {
		rp.ErrorCode = kerr.NotLeaderForPartition.Code
		rp.HighWatermark = -1
		return
	}
	hwm := int64(n.cl.h.Controller().Applied())
	rp.HighWatermark = hwm
	progress := n.cl.h.Controller().Progress()
	voter := map[int32]bool{}
	for _, v := range n.opts.Voters {
		voter[v.ID] = true
		end, at := int64(-1), int64(-1)
		if v.ID == self {
			end, at = hwm, n.now().Millis()
		} else if p, ok := progress[v.ID]; ok {
			end, at = int64(p.Index), p.At.Millis()
		}
		rp.CurrentVoters = append(rp.CurrentVoters, state(v.ID, end, at))
	}
	var observers []int32
	for id := range progress {
		if !voter[id] {
			observers = append(observers, id)
		}
	}
	slices.Sort(observers)
	for _, id := range observers {
		p := progress[id]
		rp.Observers = append(rp.Observers, state(id, int64(p.Index), p.At.Millis()))
	}
}
