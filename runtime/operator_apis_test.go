package runtime_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// segmentFilesSize sums the sizes of the segment files (*.log) of a partition's
// directory under a log dir.
func segmentFilesSize(t *testing.T, logDir, topic string, p int32) int64 {
	t.Helper()
	dir := filepath.Join(logDir, topic+"-"+strconv.Itoa(int(p)))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var n int64
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".log") {
			fi, err := e.Info()
			require.NoError(t, err)
			n += fi.Size()
		}
	}
	return n
}

// produceTo writes values to topic's partition p, one batch each, with timestamps
// tsMs, tsMs+1, ...
func produceTo(t *testing.T, cl *kgo.Client, topic string, p int32, tsMs int64,
	values ...string) {
	t.Helper()
	for i, v := range values {
		r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(v),
			Timestamp: time.UnixMilli(tsMs + int64(i))}
		require.NoError(t, cl.ProduceSync(testCtx(t, 10*time.Second), r).FirstErr())
	}
}

// kadm against one node: DescribeAllLogDirs answers the node's log dir (the absolute
// path of <data>/logs) with its filesystem's space, and each partition's size, which
// grows with what is produced and equals the segment files on disk; DescribeProducers
// lists the client's idempotent producer on the partition it wrote to.
func TestNodeDescribesLogDirsAndProducers(t *testing.T) {
	data := t.TempDir()
	n := startNode(t, data)
	cl := newClient(t, n, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	createTopic(t, cl, "sizes", 2)
	logDir, err := filepath.Abs(filepath.Join(data, "logs"))
	require.NoError(t, err)

	sizes := func() (kadm.DescribedLogDir, map[int32]int64) {
		t.Helper()
		all, err := adm.DescribeAllLogDirs(testCtx(t, 10*time.Second), nil)
		require.NoError(t, err)
		require.Len(t, all, 1, "one broker")
		var dirs kadm.DescribedLogDirs
		for _, d := range all {
			dirs = d
		}
		require.Len(t, dirs, 1, "one log dir")
		d, ok := dirs[logDir]
		require.True(t, ok, "the log dir is %s: %v", logDir, dirs)
		require.NoError(t, d.Err)
		out := map[int32]int64{}
		for p, dp := range d.Topics["sizes"] {
			require.Zero(t, dp.OffsetLag)
			require.False(t, dp.IsFuture)
			out[p] = dp.Size
		}
		return d, out
	}
	d, got := sizes()
	require.Equal(t, map[int32]int64{0: 0, 1: 0}, got)
	require.Positive(t, d.TotalBytes)
	require.Positive(t, d.UsableBytes)
	require.LessOrEqual(t, d.UsableBytes, d.TotalBytes)

	const ts = 1_767_225_600_000
	var last int64
	for round := range 2 {
		produceTo(t, cl, "sizes", 0, ts, "a", "bb", "ccc")
		_, got = sizes()
		require.Greater(t, got[0], last, "round %d: the size grew", round)
		require.Equal(t, segmentFilesSize(t, logDir, "sizes", 0), got[0],
			"round %d: the size is the segment files'", round)
		require.Zero(t, got[1])
		last = got[0]
	}

	id, epoch, err := cl.ProducerID(testCtx(t, 10*time.Second))
	require.NoError(t, err)
	described, err := adm.DescribeProducers(testCtx(t, 10*time.Second),
		kadm.TopicsSet{"sizes": {0: {}, 1: {}}})
	require.NoError(t, err)
	p0 := described["sizes"].Partitions[0]
	require.NoError(t, p0.Err)
	require.Equal(t, kadm.DescribedProducers{id: {Leader: p0.Leader, Topic: "sizes",
		Partition: 0, ProducerID: id, ProducerEpoch: epoch, LastSequence: 5,
		LastTimestamp: ts + 2, CoordinatorEpoch: -1, CurrentTxnStartOffset: -1}},
		p0.ActiveProducers)
	p1 := described["sizes"].Partitions[1]
	require.NoError(t, p1.Err)
	require.Empty(t, p1.ActiveProducers)
}

// In a cluster, kadm's DescribeAllLogDirs asks every broker and each answers for the
// replicas it hosts, followers included: every replica of a partition is listed by its
// node, with the leader's size once the followers caught up, equal to the segment files
// in the log dir that node names. DescribeProducers, sent to the leaders, lists the
// client's producer on every partition.
func TestClusterDescribesEachNodesReplicas(t *testing.T) {
	nodes := startCluster(t, 3)
	cl := newClient(t, nodes[0], kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	ctx := testCtx(t, 60*time.Second)
	res, err := adm.CreateTopics(ctx, 3, 2, nil, "spread")
	require.NoError(t, err)
	require.NoError(t, res["spread"].Err)
	for p := range int32(3) {
		produceTo(t, cl, "spread", p, 1_767_225_600_000, strings.Repeat("x", int(p)+1))
	}
	tds, err := adm.ListTopics(ctx, "spread")
	require.NoError(t, err)
	replicas := map[int32][]int32{} // by node, the partitions it holds
	for _, pd := range tds["spread"].Partitions {
		for _, r := range pd.Replicas {
			replicas[r] = append(replicas[r], pd.Partition)
		}
	}

	var all kadm.DescribedAllLogDirs
	require.Eventually(t, func() bool {
		all, err = adm.DescribeAllLogDirs(ctx, nil)
		if err != nil || len(all) != 3 {
			return false
		}
		size := map[int32]int64{}
		for _, dirs := range all {
			for _, d := range dirs {
				for p, dp := range d.Topics["spread"] {
					if dp.Size == 0 || size[p] != 0 && size[p] != dp.Size {
						return false // a follower not caught up yet
					}
					size[p] = dp.Size
				}
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "every replica reaches the leader's size")
	for node, dirs := range all {
		require.Len(t, dirs, 1, "node %d", node)
		for _, d := range dirs {
			require.NoError(t, d.Err)
			var held []int32
			for p, dp := range d.Topics["spread"] {
				held = append(held, p)
				require.Equal(t, segmentFilesSize(t, d.Dir, "spread", p), dp.Size,
					"node %d partition %d", node, p)
			}
			require.ElementsMatch(t, replicas[node], held, "node %d", node)
		}
	}

	id, _, err := cl.ProducerID(ctx)
	require.NoError(t, err)
	described, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"spread": {0: {}, 1: {}, 2: {}}})
	require.NoError(t, err)
	require.Len(t, described["spread"].Partitions, 3)
	for p, dp := range described["spread"].Partitions {
		require.NoError(t, dp.Err, "partition %d", p)
		require.Contains(t, dp.ActiveProducers, id, "partition %d", p)
		require.Equal(t, int32(0), dp.ActiveProducers[id].LastSequence)
	}
}
