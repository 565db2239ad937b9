package sim

import (
	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/replica"
	"github.com/sluicemq/sluice/disk"
)

// openLog opens (recovering) a partition's log on the node's crashable disk with the
// real storage code, so every restart exercises the real recovery path.
func openLog(n *node, tp core.TopicPartition, cfg replica.SegmentConfig) (replica.Log, error) {
	if n.w.mutantKeepLogs {
		cfg.TopicID = [16]byte{} // the checker's own test: the old topic's log is recovered
	}
	l, err := disk.OpenPartitionLogOpts(n.files, logDir(tp), n.state, statePrefix(tp), cfg,
		n.brokerNow().Millis(), n.lg, disk.LogOptions{Volatile: n.marks})
	if err != nil {
		return nil, err
	}
	return simLog{PartitionLog: l, n: n, gen: n.gen, tp: tp}, nil
}

// ResetTo empties the log as the disk log does and notes where (node.resetFrom): the
// latest reset is what the replica's producer table starts from.
func (l simLog) ResetTo(offset, nowMs int64) error {
	err := l.PartitionLog.ResetTo(offset, nowMs)
	if err == nil {
		l.n.resetFrom[l.tp] = offset
	}
	return err
}

func removeLog(n *node, tp core.TopicPartition) error {
	delete(n.resetFrom, tp)
	return disk.RemovePartitionLog(n.files, logDir(tp), n.state, statePrefix(tp))
}
