package group

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicemq/sluice/core"
)

// testRand is a splitmix64 stream: deterministic member ids.
type testRand struct{ s uint64 }

func (r *testRand) Int63() int64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return int64((z ^ (z >> 31)) >> 1)
}

func (r *testRand) Intn(n int) int { return int(r.Int63() % int64(n)) }

const ms = core.Time(1e6)

// fixture drives one group with replies captured.
type fixture struct {
	t   *testing.T
	c   *Coordinator
	g   *Group
	now core.Time
}

func newFixture(t *testing.T, delayMs int32) *fixture {
	cfg := DefaultConfig()
	cfg.InitialRebalanceDelayMs = delayMs
	c := NewCoordinator(cfg, &testRand{})
	return &fixture{t: t, c: c, g: c.GetOrCreate("g"), now: 1000 * ms}
}

func consumerProto(names ...string) []Protocol {
	var ps []Protocol
	for _, n := range names {
		ps = append(ps, Protocol{Name: n, Metadata: []byte("md-" + n)})
	}
	return ps
}

func (f *fixture) joinReq(id string) JoinRequest {
	return JoinRequest{MemberID: id, ClientID: "c", ProtocolType: "consumer",
		Protocols: consumerProto("range"), SessionMs: 10_000, RebalanceMs: 30_000,
		RequireKnownMemberID: true}
}

// join sends a JoinGroup and returns a pointer that holds the answer once it comes.
func (f *fixture) join(req JoinRequest) *[]JoinResult {
	var got []JoinResult
	f.g.Join(f.now, req, func(r JoinResult) { got = append(got, r) })
	return &got
}

// sync sends a SyncGroup; a metadata record it asks for is made durable at once.
func (f *fixture) sync(req SyncRequest) *[]SyncResult {
	var got []SyncResult
	f.g.Sync(f.now, req, func(r SyncResult) { got = append(got, r) })
	persist(f.now, f.g)
	return &got
}

// persist plays the broker: every metadata record the group wants is written and
// reported durable.
func persist(now core.Time, g *Group) {
	for range 10 {
		w, ok := g.TakeMetadataWrite(now)
		if !ok {
			return
		}
		g.MetadataWritten(now, w, 0)
	}
}

func (f *fixture) advance(d core.Time) {
	f.now += d
	f.g.Tick(f.now)
}

// newMember runs the MEMBER_ID_REQUIRED round trip and parks the real join.
func (f *fixture) newMember() (string, *[]JoinResult) {
	first := f.join(f.joinReq(""))
	require.Len(f.t, *first, 1)
	require.Equal(f.t, kerr.MemberIDRequired.Code, (*first)[0].Err)
	id := (*first)[0].MemberID
	require.NotEmpty(f.t, id)
	return id, f.join(f.joinReq(id))
}

func TestGroupTwoMembersJoinSyncHeartbeatRebalanceLeave(t *testing.T) {
	f := newFixture(t, 3000)
	a, ja := f.newMember()
	b, jb := f.newMember()
	require.Empty(t, *ja, "the initial delay holds the first rebalance")
	require.Equal(t, PreparingRebalance, f.g.State())
	at, ok := f.g.NextDeadline()
	require.True(t, ok)
	require.Equal(t, f.now+3000*ms, at)
	f.advance(3000 * ms)
	require.Len(t, *ja, 1)
	require.Len(t, *jb, 1)
	ra, rb := (*ja)[0], (*jb)[0]
	require.Zero(t, ra.Err)
	require.Equal(t, int32(1), ra.Generation)
	require.Equal(t, a, ra.LeaderID, "the first member to join leads")
	require.Equal(t, a, rb.LeaderID)
	require.Len(t, ra.Members, 2)
	require.Empty(t, rb.Members, "only the leader sees the members")
	require.Equal(t, "range", ra.Protocol)
	require.Equal(t, []byte("md-range"), ra.Members[1].Metadata)
	require.Equal(t, CompletingRebalance, f.g.State())

	sb := f.sync(SyncRequest{MemberID: b, Generation: 1})
	require.Empty(t, *sb, "a follower waits for the leader's assignment")
	sa := f.sync(SyncRequest{MemberID: a, Generation: 1, Assignments: []Assignment{
		{MemberID: a, Data: []byte("A")}, {MemberID: b, Data: []byte("B")}}})
	require.Equal(t, []byte("A"), (*sa)[0].Assignment)
	require.Equal(t, []byte("B"), (*sb)[0].Assignment)
	require.Equal(t, Stable, f.g.State())

	f.now += 5000 * ms
	require.Zero(t, f.g.Heartbeat(f.now, a, nil, 1))
	require.Zero(t, f.g.Heartbeat(f.now, b, nil, 1))
	require.Equal(t, kerr.IllegalGeneration.Code, f.g.Heartbeat(f.now, b, nil, 7))
	require.Equal(t, kerr.UnknownMemberID.Code, f.g.Heartbeat(f.now, "nobody", nil, 1))

	// A third member: the others learn of the rebalance through their heartbeats.
	c, jc := f.newMember()
	require.Equal(t, PreparingRebalance, f.g.State())
	require.Empty(t, *jc)
	require.Equal(t, kerr.RebalanceInProgress.Code, f.g.Heartbeat(f.now, a, nil, 1))
	require.Zero(t, f.g.CheckCommit(f.now, 1, b, nil), "commits go on during the rebalance")
	ja2 := f.join(f.joinReq(a))
	require.Empty(t, *ja2)
	jb2 := f.join(f.joinReq(b))
	require.Len(t, *jc, 1, "no initial delay once the group has a generation")
	require.Equal(t, int32(2), (*ja2)[0].Generation)
	require.Len(t, (*ja2)[0].Members, 3)
	require.Equal(t, a, (*jb2)[0].LeaderID)
	require.Equal(t, kerr.RebalanceInProgress.Code, f.g.CheckCommit(f.now, 2, c, nil))

	sa2 := f.sync(SyncRequest{MemberID: a, Generation: 2})
	require.Nil(t, (*sa2)[0].Assignment, "no assignment given is an empty one")
	require.Zero(t, f.g.Leave(f.now, a, nil))
	require.Equal(t, PreparingRebalance, f.g.State())
	require.Equal(t, "", f.g.Leader())
	require.Equal(t, kerr.UnknownMemberID.Code, f.g.Leave(f.now, a, nil))
	jb3, jc3 := f.join(f.joinReq(b)), f.join(f.joinReq(c))
	require.Equal(t, int32(3), (*jc3)[0].Generation)
	require.Equal(t, b, (*jb3)[0].LeaderID, "the longest-standing member leads next")
}

func TestGroupSessionExpiryRemovesMemberAndRebalances(t *testing.T) {
	f := newFixture(t, 0)
	a, ja := f.newMember()
	require.Len(t, *ja, 1, "no initial delay: one member completes at once")
	f.sync(SyncRequest{MemberID: a, Generation: 1})
	b, jb := f.newMember()
	ja2 := f.join(f.joinReq(a))
	require.Len(t, *ja2, 1)
	require.Len(t, *jb, 1)
	f.sync(SyncRequest{MemberID: b, Generation: 2})
	f.sync(SyncRequest{MemberID: a, Generation: 2})
	require.Equal(t, Stable, f.g.State())

	// a keeps heartbeating, b goes silent.
	for i := 0; i < 2; i++ {
		f.advance(4000 * ms)
		require.Zero(t, f.g.Heartbeat(f.now, a, nil, 2))
	}
	f.advance(2000 * ms)
	require.Equal(t, PreparingRebalance, f.g.State(), "b's session ran out")
	require.Equal(t, kerr.RebalanceInProgress.Code, f.g.Heartbeat(f.now, a, nil, 2))
	require.Equal(t, 1, f.g.NumMembers())
	ja3 := f.join(f.joinReq(a))
	require.Equal(t, int32(3), (*ja3)[0].Generation)
	require.Len(t, (*ja3)[0].Members, 1)

	// Now a goes silent too: the group ends up empty, generation moving on.
	f.sync(SyncRequest{MemberID: a, Generation: 3})
	f.advance(10_000 * ms)
	require.Equal(t, Empty, f.g.State())
	require.Equal(t, int32(4), f.g.Generation())
	_, ok := f.g.NextDeadline()
	require.False(t, ok)
}

func TestGroupRebalanceTimeoutDropsMembersThatDidNotRejoin(t *testing.T) {
	f := newFixture(t, 0)
	a, _ := f.newMember()
	f.sync(SyncRequest{MemberID: a, Generation: 1})
	_, jb := f.newMember()
	// a never rejoins, but heartbeats: the rebalance timeout (30s) ends the wait.
	for i := 0; i < 7; i++ {
		f.advance(4000 * ms)
		require.Equal(t, kerr.RebalanceInProgress.Code, f.g.Heartbeat(f.now, a, nil, 1))
	}
	f.advance(2000 * ms)
	require.Len(t, *jb, 1)
	require.Equal(t, int32(2), (*jb)[0].Generation)
	require.Equal(t, 1, f.g.NumMembers())
	require.Equal(t, kerr.UnknownMemberID.Code, f.g.Heartbeat(f.now, a, nil, 1))
}

func TestGroupLeaderThatNeverSyncsIsDropped(t *testing.T) {
	f := newFixture(t, 0)
	a, _ := f.newMember()
	f.sync(SyncRequest{MemberID: a, Generation: 1})
	b, jb := f.newMember()
	f.join(f.joinReq(a))
	require.Len(t, *jb, 1)
	sb := f.sync(SyncRequest{MemberID: b, Generation: 2})
	// The leader heartbeats but never sends the assignment.
	for i := 0; i < 5; i++ {
		f.advance(5000 * ms)
		require.Zero(t, f.g.Heartbeat(f.now, a, nil, 2))
	}
	require.Empty(t, *sb)
	f.advance(5000 * ms)
	require.Equal(t, kerr.RebalanceInProgress.Code, (*sb)[0].Err)
	require.Equal(t, PreparingRebalance, f.g.State())
	require.Equal(t, 1, f.g.NumMembers(), "the leader that never synced is gone")
	jb2 := f.join(f.joinReq(b))
	require.Equal(t, b, (*jb2)[0].LeaderID)
}

func TestGroupPendingMemberIDExpires(t *testing.T) {
	f := newFixture(t, 0)
	first := f.join(f.joinReq(""))
	id := (*first)[0].MemberID
	require.Equal(t, Empty, f.g.State())
	f.advance(10_000 * ms)
	got := f.join(f.joinReq(id))
	require.Equal(t, kerr.UnknownMemberID.Code, (*got)[0].Err)
	require.True(t, f.g.idle())
}

func TestGroupJoinValidation(t *testing.T) {
	f := newFixture(t, 0)
	req := f.joinReq("")
	req.SessionMs = 10
	require.Equal(t, kerr.InvalidSessionTimeout.Code, (*f.join(req))[0].Err)
	req = f.joinReq("")
	req.Protocols = nil
	require.Equal(t, kerr.InconsistentGroupProtocol.Code, (*f.join(req))[0].Err)
	a, _ := f.newMember()
	require.NotEmpty(t, a)
	req = f.joinReq("")
	req.Protocols = consumerProto("roundrobin")
	require.Equal(t, kerr.InconsistentGroupProtocol.Code, (*f.join(req))[0].Err)
	req = f.joinReq("")
	req.ProtocolType = "connect"
	require.Equal(t, kerr.InconsistentGroupProtocol.Code, (*f.join(req))[0].Err)
	require.Equal(t, kerr.UnknownMemberID.Code, (*f.join(f.joinReq("ghost")))[0].Err)
}

func TestGroupMaxSizeCountsHandedOutIDs(t *testing.T) {
	f := newFixture(t, 0)
	f.c.cfg.MaxSize = 2
	a, _ := f.newMember()
	first := f.join(f.joinReq(""))
	require.Equal(t, kerr.MemberIDRequired.Code, (*first)[0].Err)
	require.Equal(t, kerr.GroupMaxSizeReached.Code, (*f.join(f.joinReq("")))[0].Err)
	require.Zero(t, f.g.Leave(f.now, a, nil))
	require.Equal(t, kerr.MemberIDRequired.Code, (*f.join(f.joinReq("")))[0].Err)
}

func TestGroupProtocolVoteWithLeaderTieBreak(t *testing.T) {
	f := newFixture(t, 1000)
	ra := f.joinReq("")
	ra.RequireKnownMemberID = false
	ra.Protocols = consumerProto("cooperative-sticky", "range")
	ja := f.join(ra)
	rb := ra
	rb.Protocols = consumerProto("range", "cooperative-sticky", "roundrobin")
	f.join(rb)
	f.advance(1000 * ms)
	require.Equal(t, "cooperative-sticky", (*ja)[0].Protocol, "1–1 vote: the leader's choice")
	require.Equal(t, []byte("md-cooperative-sticky"), (*ja)[0].Members[1].Metadata)

	f = newFixture(t, 1000)
	ja = f.join(ra)
	f.join(rb)
	f.join(rb)
	f.advance(1000 * ms)
	require.Equal(t, "range", (*ja)[0].Protocol, "two votes beat the leader's one")
}

func TestGroupKnownFollowerRejoinGetsCurrentGeneration(t *testing.T) {
	f := newFixture(t, 0)
	a, _ := f.newMember()
	f.sync(SyncRequest{MemberID: a, Generation: 1})
	b, jb := f.newMember()
	f.join(f.joinReq(a))
	f.sync(SyncRequest{MemberID: a, Generation: 2,
		Assignments: []Assignment{{MemberID: b, Data: []byte("B")}}})
	require.Len(t, *jb, 1)
	again := f.join(f.joinReq(b))
	require.Len(t, *again, 1, "a follower's unchanged rejoin is answered at once")
	require.Equal(t, int32(2), (*again)[0].Generation)
	require.Equal(t, Stable, f.g.State())
	got := f.sync(SyncRequest{MemberID: b, Generation: 2})
	require.Equal(t, []byte("B"), (*got)[0].Assignment)
	// The leader rejoining means it wants to reassign: a rebalance starts.
	f.join(f.joinReq(a))
	require.Equal(t, PreparingRebalance, f.g.State())
	require.Equal(t, kerr.RebalanceInProgress.Code,
		(*f.sync(SyncRequest{MemberID: b, Generation: 2}))[0].Err)
}

func TestGroupStaticMemberReplacementKeepsAssignment(t *testing.T) {
	f := newFixture(t, 0)
	inst := "host-1"
	lead, _ := f.newMember()
	f.sync(SyncRequest{MemberID: lead, Generation: 1})
	req := f.joinReq("")
	req.InstanceID = &inst
	js := f.join(req)
	require.Empty(t, *js, "static members skip MEMBER_ID_REQUIRED")
	f.join(f.joinReq(lead))
	old := (*js)[0].MemberID
	f.sync(SyncRequest{MemberID: lead, Generation: 2,
		Assignments: []Assignment{{MemberID: old, Data: []byte("S")}}})
	f.sync(SyncRequest{MemberID: old, Generation: 2})

	// The instance restarts and joins without its id.
	js2 := f.join(req)
	require.Len(t, *js2, 1)
	fresh := (*js2)[0].MemberID
	require.NotEqual(t, old, fresh)
	require.Equal(t, Stable, f.g.State(), "no rebalance for an unchanged static follower")
	require.Equal(t, kerr.FencedInstanceID.Code, f.g.Heartbeat(f.now, old, &inst, 2))
	require.Zero(t, f.g.Heartbeat(f.now, fresh, &inst, 2))
	got := f.sync(SyncRequest{MemberID: fresh, InstanceID: &inst, Generation: 2})
	require.Equal(t, []byte("S"), (*got)[0].Assignment)
	// An admin removes it by instance id.
	require.Zero(t, f.g.Leave(f.now, "", &inst))
	require.Equal(t, 1, f.g.NumMembers())
}

func TestGroupSubscribedTopics(t *testing.T) {
	f := newFixture(t, 0)
	req := f.joinReq("")
	req.RequireKnownMemberID = false
	req.Protocols = []Protocol{{Name: "range", Metadata: consumerMetadata("t2", "t1")}}
	f.join(req)
	topics, known := f.g.SubscribedTopics()
	require.True(t, known)
	require.Equal(t, []string{"t1", "t2"}, topics)
}

func TestCoordinatorCollectsIdleGroupsButKeepsOffsets(t *testing.T) {
	c := NewCoordinator(DefaultConfig(), &testRand{})
	tp := core.TopicPartition{Topic: "t", Partition: 0}
	c.ApplyOffset("g", tp, &Offset{Offset: 5, LeaderEpoch: -1})
	require.NotNil(t, c.Group("g"))
	c.Collect("g")
	require.NotNil(t, c.Group("g"), "a group with offsets stays, Empty")
	o, ok := c.Offset("g", tp)
	require.True(t, ok)
	require.Equal(t, int64(5), o.Offset)
	c.ApplyOffset("g", tp, nil)
	require.Nil(t, c.Group("g"))
	require.Equal(t, []string{}, c.GroupIDs())
}

// A group whose members all left keeps its generation until the expiry pass sweeps it,
// as Kafka keeps it until its next cleanup: the members that come back continue at the
// next generation rather than at 1 again (the simulator found generations reused when
// the group was forgotten at once).
func TestEmptiedGroupKeepsItsGenerationUntilSwept(t *testing.T) {
	f := newFixture(t, 0)
	a, ja := f.newMember()
	require.Len(t, *ja, 1)
	require.Equal(t, int32(1), (*ja)[0].Generation)
	require.Zero(t, f.g.Leave(f.now, a, nil))
	f.advance(0)
	require.Equal(t, Empty, f.g.State())
	f.c.Collect("g")
	require.Same(t, f.g, f.c.Group("g"), "kept, Empty, until the sweep")

	_, jb := f.newMember()
	require.Len(t, *jb, 1)
	require.Greater(t, (*jb)[0].Generation, int32(1), "generations continue")

	// Once empty again, the sweep forgets it; a group that never had a generation
	// (only a handed-out id that expired) is forgotten at once.
	require.Zero(t, f.g.Leave(f.now, (*jb)[0].MemberID, nil))
	persist(f.now, f.g) // the empty generation's record
	require.Equal(t, []string{"g"}, f.c.Sweep(), "its stored metadata needs a tombstone")
	require.Same(t, f.g, f.c.Group("g"), "kept until the tombstone is durable")
	f.c.Forget("g")
	require.Nil(t, f.c.Group("g"))
	require.Equal(t, Dead, f.g.State())
	g2 := f.c.GetOrCreate("h")
	g2.Join(f.now, f.joinReq(""), func(JoinResult) {})
	g2.Tick(f.now + 20_000*ms)
	f.c.Collect("h")
	require.Nil(t, f.c.Group("h"))
}
