package broker

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/acl"
)

const testLogDir = "/var/lib/sluice/logs"

func withLogDir(c *Config) { c.LogDir = testLogDir }

// logDirsReq asks for topics' partitions (topics nil: every partition) at version v.
func logDirsReq(v int16, topics map[string][]int32) *kmsg.DescribeLogDirsRequest {
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Version = v
	if topics != nil {
		req.Topics = []kmsg.DescribeLogDirsRequestTopic{}
	}
	for name, parts := range topics {
		t := kmsg.NewDescribeLogDirsRequestTopic()
		t.Topic, t.Partitions = name, parts
		req.Topics = append(req.Topics, t)
	}
	return req
}

// logDirSizes is the one dir of an answer, and its partitions' sizes by partition.
func logDirSizes(t *testing.T, resp kmsg.Response) (kmsg.DescribeLogDirsResponseDir,
	map[string]map[int32]int64) {
	t.Helper()
	r := resp.(*kmsg.DescribeLogDirsResponse)
	requireCode(t, nil, r.ErrorCode)
	require.Len(t, r.Dirs, 1)
	d := r.Dirs[0]
	requireCode(t, nil, d.ErrorCode)
	sizes := map[string]map[int32]int64{}
	for _, tt := range d.Topics {
		require.NotContains(t, sizes, tt.Topic, "a topic is listed once")
		sizes[tt.Topic] = map[int32]int64{}
		for _, p := range tt.Partitions {
			require.Zero(t, p.OffsetLag)
			require.False(t, p.IsFuture)
			sizes[tt.Topic][p.Partition] = p.Size
		}
	}
	return d, sizes
}

// logBytes is the size of tp's log as its segments count it, which retention.bytes
// bounds.
func (h *harness) logBytes(topic string, p int32) int64 {
	var n int64
	for _, s := range h.env.logs[tp(topic, p)].Segments() {
		n += s.SizeBytes
	}
	return n
}

// Every version answers the node's one log dir with the size of each hosted partition:
// 0 when empty, growing by each batch's bytes, the sum of its segments. A null topic
// list is every partition; asked partitions not hosted here are left out, and one
// asked twice is answered once.
func TestDescribeLogDirsAnswersPartitionSizes(t *testing.T) {
	h := newHarness(t, withLogDir)
	h.env.batchesPerSegment = 2
	h.mustCreate("a", 2)
	h.mustCreate("b", 1)
	for _, v := range versions(kmsg.DescribeLogDirs) {
		d, sizes := logDirSizes(t, h.do(logDirsReq(v, nil)))
		require.Equal(t, testLogDir, d.Dir)
		require.Equal(t, map[string]map[int32]int64{"a": {0: 0, 1: 0}, "b": {0: 0}}, sizes,
			"v%d", v)
	}
	var want int64
	for i, vals := range [][]string{{"x"}, {"y", "z"}, {"a longer value"}} {
		b := values(vals...)
		want += int64(len(b))
		requireCode(t, nil, producePart(t, h.do(produceReq(-1, "a", 1, b))).ErrorCode)
		_, sizes := logDirSizes(t, h.do(logDirsReq(maxVersion(kmsg.DescribeLogDirs), nil)))
		require.Equal(t, want, sizes["a"][1], "after batch %d", i)
		require.Equal(t, h.logBytes("a", 1), sizes["a"][1])
		require.Zero(t, sizes["a"][0])
	}
	require.Len(t, h.env.logs[tp("a", 1)].Segments(), 2, "the size spans segments")

	_, sizes := logDirSizes(t, h.do(logDirsReq(maxVersion(kmsg.DescribeLogDirs),
		map[string][]int32{"a": {1, 7, 1}, "missing": {0}})))
	require.Equal(t, map[string]map[int32]int64{"a": {1: want}}, sizes)
	d, sizes := logDirSizes(t, h.do(logDirsReq(maxVersion(kmsg.DescribeLogDirs),
		map[string][]int32{})))
	require.Empty(t, sizes, "an empty topic list asks for nothing")
	require.Equal(t, testLogDir, d.Dir)
}

// Retention deletes the oldest segments while the rest still reaches retention.bytes;
// the size answered is what is left, the same sum retention counts.
func TestDescribeLogDirsSizeIsWhatRetentionCounts(t *testing.T) {
	h := newHarness(t, withLogDir)
	h.env.batchesPerSegment = 1
	b := values("0123456789")
	size := int64(len(b))
	// retention.ms=-1: the batches' 1970 timestamps must not expire them by time.
	h.mustCreate("r", 1, "retention.bytes="+strconv.FormatInt(2*size, 10), "retention.ms=-1")
	for range 4 {
		requireCode(t, nil, producePart(t, h.do(produceReq(-1, "r", 0,
			append([]byte(nil), b...)))).ErrorCode)
	}
	_, sizes := logDirSizes(t, h.do(logDirsReq(maxVersion(kmsg.DescribeLogDirs), nil)))
	require.Equal(t, 4*size, sizes["r"][0])
	h.advance(time.Duration(h.cfg.RetentionCheckIntervalMs) * time.Millisecond)
	_, sizes = logDirSizes(t, h.do(logDirsReq(maxVersion(kmsg.DescribeLogDirs), nil)))
	require.Equal(t, 2*size, sizes["r"][0], "two segments went, two are left")
	require.Equal(t, h.logBytes("r", 0), sizes["r"][0])
}

// v4 carries the filesystem's total and usable bytes when the Env can tell them, -1
// (unknown) when it cannot; earlier versions do not carry them.
func TestDescribeLogDirsV4CarriesTheFilesystemSpace(t *testing.T) {
	h := newHarness(t, withLogDir)
	d, _ := logDirSizes(t, h.do(logDirsReq(4, nil)))
	require.Equal(t, []int64{-1, -1}, []int64{d.TotalBytes, d.UsableBytes})
	h.env.logDirSpace = []int64{1 << 40, 1 << 30}
	d, _ = logDirSizes(t, h.do(logDirsReq(4, nil)))
	require.Equal(t, []int64{1 << 40, 1 << 30}, []int64{d.TotalBytes, d.UsableBytes})
	d, _ = logDirSizes(t, h.do(logDirsReq(3, nil)))
	require.Equal(t, []int64{-1, -1}, []int64{d.TotalBytes, d.UsableBytes},
		"not in v3: decoded as kmsg's defaults")
}

// In a cluster each node answers for the replicas it hosts, followers included, and
// leaves out the partitions of others.
func TestDescribeLogDirsAnswersTheNodesOwnReplicas(t *testing.T) {
	c := newTestClusterWith(t, []func(*Config){withLogDir}, 2, 1, 2, 3)
	c.handFollowers = false
	c.commit(assignedTopicRecord("r", nil, pstate(ids(1, 2), ids(1, 2), 1, 0, 0),
		pstate(ids(2, 3), ids(2, 3), 3, 0, 0)))
	b := values("replicated")
	requireCode(t, nil, producePart(t, c.nodes[1].do(produceReq(1, "r", 0, b))).ErrorCode)
	c.settle()
	c.advance(time.Second)
	want := map[int32]map[string]map[int32]int64{
		1: {"r": {0: int64(len(b))}},
		2: {"r": {0: int64(len(b)), 1: 0}},
		3: {"r": {1: 0}},
	}
	for id, w := range want {
		_, sizes := logDirSizes(t, c.nodes[id].do(logDirsReq(maxVersion(kmsg.DescribeLogDirs),
			nil)))
		require.Equal(t, w, sizes, "node %d", id)
	}
}

// DescribeLogDirs needs DESCRIBE on the cluster: refused, v3+ answers
// CLUSTER_AUTHORIZATION_FAILED and no dir, earlier versions no dir.
func TestDescribeLogDirsNeedsClusterDescribe(t *testing.T) {
	h := newHarness(t, withAuthz, withLogDir)
	h.mustCreate("t", 1)
	for _, v := range versions(kmsg.DescribeLogDirs) {
		r := h.doAs(bob, logDirsReq(v, nil)).(*kmsg.DescribeLogDirsResponse)
		require.Empty(t, r.Dirs, "v%d", v)
		if v >= 3 {
			requireCode(t, kerr.ClusterAuthorizationFailed, r.ErrorCode)
		}
	}
	require.Equal(t, []int16{0, 0}, h.createACLs(admin,
		creation(acl.ResourceTopic, "t", acl.PatternLiteral, bob, acl.OpAll, acl.Allow),
		creation(acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral, bob,
			acl.OpDescribeConfigs, acl.Allow)))
	r := h.doAs(bob, logDirsReq(4, nil)).(*kmsg.DescribeLogDirsResponse)
	requireCode(t, kerr.ClusterAuthorizationFailed, r.ErrorCode,
		"topic rights and DESCRIBE_CONFIGS are not DESCRIBE on the cluster")
	require.Equal(t, []int16{0}, h.createACLs(admin,
		creation(acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral, bob,
			acl.OpDescribe, acl.Allow)))
	_, sizes := logDirSizes(t, h.doAs(bob, logDirsReq(4, nil)))
	require.Equal(t, map[string]map[int32]int64{"t": {0: 0}}, sizes)
}
