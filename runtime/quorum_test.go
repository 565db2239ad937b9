package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap/zaptest"

	"github.com/sluicemq/sluice/internal/testport"
	"github.com/sluicemq/sluice/runtime"
	"github.com/sluicemq/sluice/runtime/raftmeta"
)

// freeAddr is a loopback address with a port free a moment ago, outside the
// ephemeral range so a restarted node finds it free again (internal/testport).
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := testport.Addr()
	require.NoError(t, err)
	return addr
}

// waitUnfenced waits until n's lifecycle is registered with the controller and
// unfenced.
func waitUnfenced(t *testing.T, n *runtime.Node) {
	t.Helper()
	require.Eventually(t, func() bool {
		st, ok := n.Membership()
		return ok && st.Registered && !st.Fenced
	}, 20*time.Second, 10*time.Millisecond, "the node is registered and unfenced")
}

// quorumNode is a node over dir whose metadata log is a raft quorum of voters, or its
// own log when voters is nil. It is not closed for the caller.
func quorumNode(t *testing.T, dir string, voters []raftmeta.Voter) (*runtime.Node, error) {
	t.Helper()
	n := runtime.NewNode(runtime.Options{ListenAddr: "127.0.0.1:0", DataDir: dir,
		Logger: zaptest.NewLogger(t), DrainTimeout: 2 * time.Second, Voters: voters,
		QuorumTiming: raftmeta.TestTiming()})
	return n, n.Start(context.Background())
}

// A node whose metadata log is a quorum of one voter serves as a node with its own log
// does: topics created through raft are there, with their data, after a restart.
func TestQuorumOfOneServesAndRemembersTopics(t *testing.T) {
	dir := t.TempDir()
	voters := []raftmeta.Voter{{ID: 1, Addr: freeAddr(t)}}
	n, err := quorumNode(t, dir, voters)
	require.NoError(t, err)
	require.Equal(t, voters[0].Addr, n.QuorumAddr())
	// Topics are placed on registered, unfenced brokers: wait until this one is (what
	// /readyz waits for), as Kafka's broker serves clients only once unfenced.
	waitUnfenced(t, n)
	cl := newClient(t, n, kgo.DefaultProduceTopic("q"))
	createTopic(t, cl, "q", 2)
	for _, v := range []string{"a", "b", "c"} {
		require.NoError(t, cl.ProduceSync(testCtx(t, 10*time.Second),
			&kgo.Record{Value: []byte(v)}).FirstErr())
	}
	cl.Close()
	require.NoError(t, n.Close())

	n, err = quorumNode(t, dir, voters)
	require.NoError(t, err)
	defer func() { require.NoError(t, n.Close()) }()
	adm := kadm.NewClient(newClient(t, n))
	td, err := adm.ListTopics(testCtx(t, 10*time.Second), "q")
	require.NoError(t, err)
	require.Len(t, td["q"].Partitions, 2, "the topic came back from the raft log")
	// The restarted broker leads again once unfenced, in a new leader epoch
	// (docs/replication.md, "Restarts"): its controller accepts the new incarnation once
	// the old one's session (broker.session.timeout.ms) expired, and until then clients
	// get NOT_LEADER_OR_FOLLOWER or LEADER_NOT_AVAILABLE, which they retry.
	waitUnfenced(t, n)
	var total int64
	require.Eventually(t, func() bool {
		ends, err := adm.ListEndOffsets(testCtx(t, 10*time.Second), "q")
		if err != nil {
			return false
		}
		total = 0
		ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
		return true
	}, 20*time.Second, 20*time.Millisecond, "the partitions are led again")
	require.EqualValues(t, 3, total, "and its records")
}

// A data directory keeps the kind of metadata log it was created with: switching would
// start from an empty log and forget every topic. A quorum of several voters is refused
// while partitions are not replicated.
func TestMetadataLogKindIsKept(t *testing.T) {
	own := t.TempDir()
	n := startNode(t, own)
	createTopic(t, newClient(t, n), "kept", 1)
	require.NoError(t, n.Close())
	_, err := quorumNode(t, own, []raftmeta.Voter{{ID: 1, Addr: freeAddr(t)}})
	require.ErrorContains(t, err, "start it without --voters")

	quorum := t.TempDir()
	n, err = quorumNode(t, quorum, []raftmeta.Voter{{ID: 1, Addr: freeAddr(t)}})
	require.NoError(t, err)
	waitUnfenced(t, n)
	createTopic(t, newClient(t, n), "kept", 1)
	require.NoError(t, n.Close())
	_, err = quorumNode(t, quorum, nil)
	require.ErrorContains(t, err, "belongs to a metadata quorum")
}
