package runtime_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicemq/sluice/runtime"
	"github.com/sluicemq/sluice/runtime/raftmeta"
)

// A node added to a running cluster takes a partition over (KIP-455): three of four
// voters run, a topic with three replicas takes acknowledged (acks=all) records, node 4
// starts, and partition 0 is moved from [1 2 3] to [4 2 3]. The move completes once
// node 4 caught up (ListPartitionReassignments is empty), node 4 leads and holds every
// acknowledged record (a consumer reads them all from it), node 1 no longer has the
// partition's directory, and a restart of node 1 does not bring it back.
func TestClusterReassignsAPartitionOntoANewNode(t *testing.T) {
	voters := make([]raftmeta.Voter, 4)
	for i := range voters {
		voters[i] = raftmeta.Voter{ID: int32(i + 1), Addr: freeAddr(t)}
	}
	dirs := make([]string, 4)
	nodes := make([]*runtime.Node, 4)
	start := func(i int) error {
		nodes[i] = clusterNode(t, int32(i+1), dirs[i], voters)
		n := nodes[i]
		t.Cleanup(func() { _ = n.Close() })
		return n.Start(context.Background())
	}
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range 4 {
		dirs[i] = t.TempDir()
	}
	for i := range 3 {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = start(i) }()
	}
	wg.Wait()
	for i := range 3 {
		require.NoError(t, errs[i])
		waitUnfenced(t, nodes[i])
	}

	cl := newClient(t, nodes[0], kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic("moved"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	ctx := testCtx(t, 90*time.Second)
	res, err := adm.CreateTopics(ctx, 1, 3, map[string]*string{
		"min.insync.replicas": kadm.StringPtr("2")}, "moved")
	require.NoError(t, err)
	require.NoError(t, res["moved"].Err)
	const records = 300
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			r := &kgo.Record{Value: []byte(fmt.Sprintf("r%04d", i))}
			require.NoError(t, cl.ProduceSync(ctx, r).FirstErr(), "record %d", i)
		}
	}
	produce(0, records/2)
	s := topicStates(nodes[0], "moved")[0]
	require.ElementsMatch(t, []int32{1, 2, 3}, s.Replicas)

	require.NoError(t, start(3))
	waitUnfenced(t, nodes[3])
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("moved", 0, []int32{4, 2, 3})
	rs, err := adm.AlterPartitionAssignments(ctx, req)
	require.NoError(t, err)
	require.NoError(t, rs["moved"][0].Err, rs["moved"][0].ErrMessage)
	produce(records/2, records) // acknowledged while node 4 catches up

	set := kadm.TopicsSet{}
	set.Add("moved", 0)
	require.Eventually(t, func() bool {
		l, err := adm.ListPartitionReassignments(ctx, set)
		return err == nil && len(l["moved"]) == 0
	}, 30*time.Second, 50*time.Millisecond, "the reassignment completes")
	// The leader is one of the new replicas: node 4 when node 1 led at the move (the
	// first of the target in the ISR), else whoever led and stays (Kafka moves a leader
	// only when it is removed; a loaded machine may have moved it off node 1 earlier).
	// Node 4 is in the ISR: it holds everything acknowledged.
	for _, n := range nodes {
		require.Eventually(t, func() bool {
			st := topicStates(n, "moved")
			return len(st) == 1 && len(st[0].Replicas) == 3 && st[0].Leader != 1 &&
				slices.Contains(st[0].Replicas, st[0].Leader) &&
				slices.Contains(st[0].ISR, 4)
		}, 10*time.Second, 10*time.Millisecond, "%+v", topicStates(n, "moved"))
		st := topicStates(n, "moved")[0]
		require.Equal(t, []int32{4, 2, 3}, st.Replicas)
		require.Empty(t, st.Adding)
		require.Empty(t, st.Removing)
		if s.Leader == 1 {
			require.Equal(t, int32(4), st.Leader, "the removed leader's place goes to 4")
		}
	}
	gone := filepath.Join(dirs[0], "logs", "moved-0")
	require.Eventually(t, func() bool {
		_, err := os.Stat(gone)
		return os.IsNotExist(err)
	}, 10*time.Second, 10*time.Millisecond, "node 1 removed the partition's directory")
	_, err = os.Stat(filepath.Join(dirs[3], "logs", "moved-0"))
	require.NoError(t, err, "node 4 holds the partition")

	// A consumer reads every acknowledged record from the new replicas, in order.
	consumer := newClient(t, nodes[3], kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"moved": {0: kgo.NewOffset().AtStart()}}))
	got := 0
	for got < records {
		fs := consumer.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			require.Equal(t, fmt.Sprintf("r%04d", got), string(r.Value))
			got++
		})
	}
	require.Equal(t, records, got)

	// A restart of node 1 does not bring the partition back.
	require.NoError(t, nodes[0].Close())
	require.NoError(t, start(0))
	waitUnfenced(t, nodes[0])
	_, err = os.Stat(gone)
	require.True(t, os.IsNotExist(err), "no directory after the restart")
	require.Equal(t, []int32{4, 2, 3}, topicStates(nodes[0], "moved")[0].Replicas)
}
