package broker

// DescribeLogDirs (key 35), versions 0–4.
//
// A node keeps its partition logs in one directory (Config.LogDir), so the answer has
// one log dir: its path, and per partition this node hosts (leader or follower) the
// size of its log, the sum of its segments' sizes, which is what retention.bytes
// bounds (replica.SizeBytes). OffsetLag is 0 and IsFuture false: a node has no future
// replicas (no moves between directories, KIP-113). From v4 the dir carries the total
// and usable bytes of its filesystem when the Env can tell them (LogDirSpacer), else
// -1, Kafka's "unknown".
//
// Topics null asks for every hosted partition; otherwise the asked partitions this
// node does not host are left out, as Kafka leaves them out, and a partition asked
// twice is answered once. Each broker answers for its own replicas: kadm's
// DescribeAllLogDirs asks every broker. DESCRIBE on the cluster is needed
// (authorize.go): refused, the answer has no dir and, from v3, the top-level error
// CLUSTER_AUTHORIZATION_FAILED.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
)

func (rm *replicaManager) handleDescribeLogDirs(m *kmsg.DescribeLogDirsRequest) kmsg.Response {
	resp := m.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = rm.cfg.LogDir
	if s, ok := rm.env.(LogDirSpacer); ok {
		if total, usable, ok := s.LogDirSpace(); ok {
			dir.TotalBytes, dir.UsableBytes = total, usable
		}
	}
	for _, tp := range rm.logDirPartitions(m.Topics) {
		n := len(dir.Topics)
		if n == 0 || dir.Topics[n-1].Topic != tp.Topic {
			t := kmsg.NewDescribeLogDirsResponseDirTopic()
			t.Topic = tp.Topic
			dir.Topics = append(dir.Topics, t)
			n++
		}
		p := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		p.Partition, p.Size = tp.Partition, rm.replicas[tp].SizeBytes()
		dir.Topics[n-1].Partitions = append(dir.Topics[n-1].Partitions, p)
	}
	resp.Dirs = append(resp.Dirs, dir)
	return resp
}

// logDirPartitions lists the hosted partitions topics asks for (every one when nil),
// each once, in partition order.
func (rm *replicaManager) logDirPartitions(
	topics []kmsg.DescribeLogDirsRequestTopic) []core.TopicPartition {
	all := rm.sortedPartitions()
	if topics == nil {
		return all
	}
	asked := map[core.TopicPartition]bool{}
	for _, t := range topics {
		for _, p := range t.Partitions {
			asked[core.TopicPartition{Topic: t.Topic, Partition: p}] = true
		}
	}
	out := all[:0]
	for _, tp := range all {
		if asked[tp] {
			out = append(out, tp)
		}
	}
	return out
}
