package linearizability

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// groupHist builds membership histories: one group "g", one topic "t".
type groupHist struct{ h History }

func (b *groupHist) joined(inc uint64, member string, gen int32, leader string, call, ret int64) {
	b.h.Groups = append(b.h.Groups, GroupEvent{Kind: GroupJoined, Group: "g", Incarnation: inc,
		Member: member, Generation: gen, Leader: leader, Protocol: "range", Call: call,
		Return: ret})
}

func (b *groupHist) synced(inc uint64, member string, gen int32, plan string, parts []int32,
	call, ret int64) {
	b.h.Groups = append(b.h.Groups, GroupEvent{Kind: GroupSynced, Group: "g", Incarnation: inc,
		Member: member, Generation: gen, Topic: "t", Partitions: parts, Plan: plan,
		Call: call, Return: ret})
}

func (b *groupHist) heartbeat(inc uint64, member string, gen int32, call, ret int64) {
	b.h.Groups = append(b.h.Groups, GroupEvent{Kind: GroupHeartbeat, Group: "g",
		Incarnation: inc, Member: member, Generation: gen, Call: call, Return: ret})
}

func (b *groupHist) commit(inc uint64, member string, gen int32, code int16, call, ret int64) {
	b.h.Groups = append(b.h.Groups, GroupEvent{Kind: GroupCommit, Group: "g", Incarnation: inc,
		Member: member, Generation: gen, Topic: "t", Code: code, Call: call, Return: ret})
}

func kinds(as []Anomaly) map[string]int {
	out := map[string]int{}
	for _, a := range as {
		out[a.Kind]++
	}
	return out
}

func TestPlanRoundTrip(t *testing.T) {
	s := EncodePlan(3, "a", []string{"a", "b"}, map[string][]int32{"a": {0, 2}})
	require.Equal(t, "gen=3 leader=a a:0,2 b:", s)
	p, err := ParsePlan(s)
	require.NoError(t, err)
	require.Equal(t, int32(3), p.Generation)
	require.Equal(t, []int32{0, 2}, p.Owned["a"])
	_, listed := p.Owned["b"]
	require.True(t, listed)
	_, err = ParsePlan("garbage")
	require.Error(t, err)
}

func TestGroupHistoryThatIsFine(t *testing.T) {
	var b groupHist
	plan := EncodePlan(1, "a", []string{"a", "b"}, map[string][]int32{"a": {0}, "b": {1}})
	b.joined(1, "a", 1, "a", 0, 10)
	b.joined(1, "b", 1, "a", 0, 10)
	b.synced(1, "a", 1, plan, []int32{0}, 11, 12)
	b.synced(1, "b", 1, plan, []int32{1}, 11, 13)
	b.commit(1, "a", 1, 0, 14, 15)
	b.joined(1, "a", 2, "a", 20, 30)
	b.commit(1, "b", 1, 22, 31, 32) // ILLEGAL_GENERATION: rejected, fine
	// The coordinator crashes before generation 2's record is durable: the next one
	// restores generation 1 with its members, who go on without rejoining, and
	// generation 2 is formed again, by another leader.
	b.heartbeat(2, "b", 1, 40, 41)
	b.commit(2, "b", 1, 0, 42, 43)
	b.joined(2, "b", 2, "b", 44, 50)
	p2 := EncodePlan(2, "b", []string{"b"}, map[string][]int32{"b": {0, 1}})
	b.synced(2, "b", 2, p2, []int32{0, 1}, 51, 52)
	b.commit(2, "b", 2, 0, 53, 54)
	// Another restart: generation 2 was synced, so it is restored as it was.
	b.heartbeat(3, "b", 2, 60, 61)
	b.synced(3, "b", 2, p2, []int32{0, 1}, 62, 63)
	b.commit(3, "b", 2, 0, 64, 65)
	require.Empty(t, checkGroups(&b.h))
}

func TestSyncedGenerationIsNeverReused(t *testing.T) {
	var b groupHist
	p1 := EncodePlan(1, "a", []string{"a"}, map[string][]int32{"a": {0, 1}})
	b.joined(1, "a", 1, "a", 0, 10)
	b.synced(1, "a", 1, p1, []int32{0, 1}, 11, 12)
	// The next incarnation forms generation 1 again (the record was lost).
	b.joined(2, "c", 1, "c", 20, 30)
	b.synced(2, "c", 1, EncodePlan(1, "c", []string{"c"}, map[string][]int32{"c": {0, 1}}),
		[]int32{0, 1}, 31, 32)
	require.GreaterOrEqual(t, kinds(checkGroups(&b.h))[SplitBrain], 1,
		"two plans for generation 1")
}

func TestSplitBrainIsCaught(t *testing.T) {
	var b groupHist
	p1 := EncodePlan(1, "a", []string{"a", "b"}, map[string][]int32{"a": {0}, "b": {0, 1}})
	b.joined(1, "a", 1, "a", 0, 10)
	b.joined(1, "b", 1, "a", 0, 10)
	b.synced(1, "a", 1, p1, []int32{0}, 11, 12)
	b.synced(1, "b", 1, p1, []int32{0, 1}, 11, 12)
	require.Equal(t, 1, kinds(checkGroups(&b.h))[SplitBrain], "partition 0 twice")

	var c groupHist
	pa := EncodePlan(1, "a", []string{"a", "b"}, map[string][]int32{"a": {0}, "b": {1}})
	pb := EncodePlan(1, "b", []string{"a", "b"}, map[string][]int32{"a": {1}, "b": {0}})
	c.joined(1, "a", 1, "a", 0, 10)
	c.joined(1, "b", 1, "b", 0, 10) // two leaders
	c.synced(1, "a", 1, pa, []int32{0}, 11, 12)
	c.synced(1, "b", 1, pb, []int32{0}, 11, 12)
	require.GreaterOrEqual(t, kinds(checkGroups(&c.h))[SplitBrain], 3)

	var d groupHist // an assignment planned for another generation
	d.joined(1, "a", 2, "a", 0, 10)
	d.synced(1, "a", 2, EncodePlan(1, "a", []string{"a"}, map[string][]int32{"a": {0}}),
		[]int32{0}, 11, 12)
	require.Equal(t, 1, kinds(checkGroups(&d.h))[SplitBrain])
}

func TestGenerationRegressionIsCaught(t *testing.T) {
	var b groupHist
	b.joined(1, "a", 3, "a", 0, 10)
	b.joined(1, "b", 2, "a", 11, 20) // asked after generation 3 was seen
	require.Equal(t, 1, kinds(checkGroups(&b.h))[GenerationRegressed])

	var c groupHist // overlapping requests may see either order
	c.joined(1, "a", 3, "a", 0, 10)
	c.joined(1, "b", 2, "a", 5, 20)
	require.Zero(t, kinds(checkGroups(&c.h))[GenerationRegressed])

	var d groupHist // generation 3 was never synced: a crash may take it back
	d.joined(1, "a", 3, "a", 0, 10)
	d.joined(2, "b", 1, "b", 11, 20)
	require.Zero(t, kinds(checkGroups(&d.h))[GenerationRegressed])

	var e groupHist // generation 3 was synced: it is durable
	e.joined(1, "a", 3, "a", 0, 10)
	e.synced(1, "a", 3, EncodePlan(3, "a", []string{"a"}, map[string][]int32{"a": {0}}),
		[]int32{0}, 11, 12)
	e.heartbeat(2, "a", 2, 13, 20)
	require.Equal(t, 1, kinds(checkGroups(&e.h))[GenerationRegressed])
}

func TestStaleCommitAcceptedIsCaught(t *testing.T) {
	var b groupHist
	b.joined(1, "a", 1, "a", 0, 10)
	b.joined(1, "b", 2, "b", 20, 30)
	b.commit(1, "a", 1, 0, 31, 32) // generation 2 seen before it was sent
	require.Equal(t, 1, kinds(checkGroups(&b.h))[StaleCommitAccepted])

	var c groupHist // the same commit sent while generation 2 was forming is fine
	c.joined(1, "a", 1, "a", 0, 10)
	c.joined(1, "b", 2, "b", 20, 30)
	c.commit(1, "a", 1, 0, 25, 32)
	require.Zero(t, kinds(checkGroups(&c.h))[StaleCommitAccepted])

	var d groupHist // a member only admitted by a later incarnation
	d.joined(2, "a", 1, "a", 0, 10)
	d.commit(1, "a", 1, 0, 40, 41)
	d.commit(2, "z", 1, 0, 40, 41) // never admitted
	require.Equal(t, 2, kinds(checkGroups(&d.h))[StaleCommitAccepted])

	var e groupHist // generation 2 was synced before the commit was sent, elsewhere
	e.joined(1, "a", 1, "a", 0, 10)
	e.joined(1, "a", 2, "a", 20, 30)
	e.synced(1, "a", 2, EncodePlan(2, "a", []string{"a"}, map[string][]int32{"a": {0}}),
		[]int32{0}, 31, 32)
	e.commit(2, "a", 1, 0, 40, 41)
	require.Equal(t, 1, kinds(checkGroups(&e.h))[StaleCommitAccepted])

	rep := Check(&d.h, Options{})
	require.False(t, rep.OK())
	require.Contains(t, rep.Anomalies[0].String(), "stale-commit-accepted group g generation 1")
}
