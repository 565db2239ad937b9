package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A second process started with a live node's id refuses to run, and the cluster keeps
// serving: with a voter's id and its own quorum address it exits 2 at once (the voters
// would never reach it); with a live non-voter's id the quorum leader refuses its join
// (which would move the member to the new address) until it gives up with exit 1.
func TestClusterRefusesASecondProcessWithALiveNodesID(t *testing.T) {
	if testing.Short() {
		t.Skip("starts five node processes")
	}
	c := startCluster(t, 3)
	nd4 := c.addNonvoter()
	c.awaitBrokers(4, 30*time.Second)
	dir := t.TempDir()

	twin := func(id int32) []string {
		return []string{"node", "--id", fmt.Sprint(id),
			"--listen", fmt.Sprintf("127.0.0.1:%d", freePort(t)),
			"--controller-listen", fmt.Sprintf("127.0.0.1:%d", freePort(t)),
			"--voters", c.voters, "--data", filepath.Join(dir, fmt.Sprintf("twin%d", id)),
			"--config", c.nodes[0].config, "--http-listen=", "--log-format", "console"}
	}
	code, out, _ := runSluice(t, 30*time.Second, nil, twin(2)...)
	require.Equal(t, 2, code, out)
	require.Contains(t, out, "node 2 is voter 2@"+c.node(2).ctl+" in --voters")

	// broker.session.timeout.ms is 3 s in these tests: the join gives up after 8 s.
	code, out, took := runSluice(t, 90*time.Second, nil, twin(4)...)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "node id in use by another live process", outputTail([]byte(out)))
	require.NotContains(t, out, "restart the node", "a restart would not help")
	t.Logf("the twin of node 4 gave up after %s", took)

	// The real node 4 is still a member at its own address and a broker.
	q := c.describeQuorum(c.node(c.quorumLeader()))
	require.NotNil(t, q)
	found := false
	for _, o := range q.Observers {
		found = found || o.ReplicaID == nd4.id
	}
	require.True(t, found, "node 4 still follows the quorum: %+v", q.Observers)
	c.awaitBrokers(4, 10*time.Second)

	code, out, _ = runSluice(t, 30*time.Second, nil, "topic", "create", "after",
		"--partitions", "1", "--replication-factor", "3", "--bootstrap",
		strings.Join(c.seeds(), ","))
	require.Equal(t, 0, code, out)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ConsumeTopics("after"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "after",
		Value: []byte("still serving")}).FirstErr())
	fs := cl.PollFetches(ctx)
	require.NoError(t, fs.Err0())
	require.Equal(t, 1, fs.NumRecords())
	require.Equal(t, "still serving", string(fs.Records()[0].Value))
}
