package broker

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/group"
)

// Group membership survives restarts (core/group/metadata.go): these tests restart the
// node between a group's requests.

// twoMemberGroup forms a Stable group g of members a (leader) and b at generation 1,
// both gathered by Kafka's 3 s initial rebalance delay.
func twoMemberGroup(h *harness) (a, b *member) {
	h.t.Helper()
	a, b = h.member(1, "g", "t"), h.member(2, "g", "t")
	ja, jb := a.sendJoin(), b.sendJoin()
	h.waitMs(3000)
	requireCode(h.t, nil, a.joined(ja).ErrorCode)
	requireCode(h.t, nil, b.joined(jb).ErrorCode)
	sb := b.sendSync(nil)
	sa := a.sendSync(map[string]string{a.id: "for-a", b.id: "for-b"})
	require.Equal(h.t, "for-a", string(a.synced(sa).MemberAssignment))
	require.Equal(h.t, "for-b", string(b.synced(sb).MemberAssignment))
	return a, b
}

// groupRecords decodes the group metadata records of the offsets partition holding
// group id, in log order (nil: a tombstone), as a Kafka tool would read them.
func groupRecords(h *harness, id string) []*kmsg.GroupMetadataValue {
	h.t.Helper()
	tp := core.TopicPartition{Topic: group.OffsetsTopic,
		Partition: group.Partition(id, h.b.groups.parts)}
	var out []*kmsg.GroupMetadataValue
	for _, raw := range h.env.logs[tp].Batches() {
		kvs, err := batch.Records(raw)
		require.NoError(h.t, err)
		for _, kv := range kvs {
			k := kmsg.NewGroupMetadataKey()
			if len(kv.Key) < 2 || kv.Key[1] != 2 {
				continue // an offset commit
			}
			require.NoError(h.t, k.ReadFrom(kv.Key))
			if k.Group != id {
				continue
			}
			if kv.Value == nil {
				out = append(out, nil)
				continue
			}
			v := kmsg.NewGroupMetadataValue()
			require.NoError(h.t, v.ReadFrom(kv.Value))
			out = append(out, &v)
		}
	}
	return out
}

func TestGroupMembershipSurvivesRestart(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 2)
	a, b := twoMemberGroup(h)

	recs := groupRecords(h, "g")
	require.Len(t, recs, 1, "one record, written when the assignment was set")
	v := recs[0]
	require.Equal(t, int16(3), v.Version)
	require.Equal(t, "consumer", v.ProtocolType)
	require.Equal(t, int32(1), v.Generation)
	require.Equal(t, "range", *v.Protocol)
	require.Equal(t, a.id, *v.Leader)
	require.Len(t, v.Members, 2)
	require.Equal(t, a.id, v.Members[0].MemberID)
	require.Equal(t, "for-b", string(v.Members[1].Assignment))
	require.Equal(t, int32(10_000), v.Members[1].SessionTimeoutMillis)
	require.Equal(t, int32(30_000), v.Members[1].RebalanceTimeoutMillis)

	h.waitMs(4000)
	h.restart()
	d := h.describeGroup("g")
	require.Equal(t, "Stable", d.State)
	require.Equal(t, "range", d.Protocol)
	require.Len(t, d.Members, 2)
	require.Equal(t, a.id, d.Members[0].MemberID)
	require.Equal(t, "for-b", string(d.Members[1].MemberAssignment))

	// The sessions restarted at load: 9 s after the restart (13 s after the last
	// heartbeat, more than the 10 s session) the members are still there.
	h.waitMs(9000)
	requireCode(t, nil, a.heartbeat())
	requireCode(t, nil, b.heartbeat())
	require.Equal(t, "for-a", string(a.synced(a.sendSync(nil)).MemberAssignment),
		"a Stable group answers a SyncGroup with the stored assignment")
	requireCode(t, nil, commitCodes(h.do(commitReq("g", 1, b.id, "t", int32(1),
		int64(4))))[0], "the restored generation commits")

	// The leader rejoining starts generation 2: generations continue.
	ja, jb := a.sendJoin(), b.sendJoin()
	h.waitMs(0)
	require.Equal(t, int32(2), a.joined(ja).Generation)
	require.Equal(t, int32(2), b.joined(jb).Generation)

	// A member that stops heartbeating after a restart expires as usual.
	sb := b.sendSync(nil)
	a.synced(a.sendSync(map[string]string{a.id: "A", b.id: "B"}))
	b.synced(sb)
	h.restart()
	for range 3 {
		h.waitMs(3000)
		requireCode(t, nil, a.heartbeat())
	}
	h.waitMs(2000)
	requireCode(t, kerr.RebalanceInProgress, a.heartbeat(), "b's session ran out")
}

func TestSyncAnsweredOnlyOnceItsRecordIsDurable(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 2)
	a, b := twoMemberGroup(h)

	// A third member: generation 2 is formed, and its assignment waits for the fsync.
	c := h.member(3, "g", "t")
	jc := c.sendJoin()
	ja, jb := a.sendJoin(), b.sendJoin()
	h.waitMs(0)
	for _, m := range []*member{a, b, c} {
		require.Equal(t, int32(2), m.joined(map[*member]uint64{a: ja, b: jb, c: jc}[m]).
			Generation)
	}
	h.holdSyncs = true
	sc := c.sendSync(nil)
	sa := a.sendSync(map[string]string{a.id: "A", b.id: "B", c.id: "C"})
	h.settle()
	_, answered := h.reply(sa)
	require.False(t, answered, "the leader's sync waits for the record")
	_, answered = h.reply(sc)
	require.False(t, answered)
	require.Equal(t, "CompletingRebalance", h.describeGroup("g").State)

	// Power loss before the fsync: the group comes back at generation 1, whose
	// assignment was the last one told.
	h.crash()
	h.holdSyncs = false
	for _, m := range []*member{a, b} {
		m.gen = 1
		requireCode(t, nil, m.heartbeat(), "generation 1 is back")
	}
	c.gen = 2
	requireCode(t, kerr.UnknownMemberID, c.heartbeat(), "c joined a generation never stored")
	d := h.describeGroup("g")
	require.Equal(t, "Stable", d.State)
	require.Len(t, d.Members, 2)
	require.Equal(t, "for-a", string(d.Members[0].MemberAssignment))
}

func TestSyncWriteFailureRebalances(t *testing.T) {
	h := newHarness(t, groupOpts)
	h.mustCreate("t", 1)
	a := h.member(1, "g", "t")
	requireCode(t, nil, a.joined(a.sendJoin()).ErrorCode)
	h.holdSyncs = true
	sa := a.sendSync(map[string]string{a.id: "A"})
	h.settle() // the offsets topic is created; the record waits for its fsync
	_, answered := h.reply(sa)
	require.False(t, answered)
	otp := core.TopicPartition{Topic: group.OffsetsTopic,
		Partition: group.Partition("g", h.b.groups.parts)}
	h.b.offsetWritesFailed(otp, kerr.KafkaStorageError.Code)
	resp, ok := h.reply(sa)
	require.True(t, ok, "a failed write answers the sync")
	requireCode(t, kerr.NotCoordinator, resp.(*kmsg.SyncGroupResponse).ErrorCode)
	h.holdSyncs = false
	require.Equal(t, "PreparingRebalance", h.describeGroup("g").State)
}

func TestDeletedGroupDoesNotComeBack(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 2)
	a, b := twoMemberGroup(h)
	requireCode(t, nil, b.leave())
	requireCode(t, nil, a.leave())
	h.settle()
	recs := groupRecords(h, "g")
	require.Len(t, recs, 2, "the Empty generation is stored too")
	require.Equal(t, int32(2), recs[1].Generation)
	require.Empty(t, recs[1].Members)
	require.Nil(t, recs[1].Leader)

	h.restart()
	require.Equal(t, "Empty", h.describeGroup("g").State, "an Empty group is kept")
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Version = maxVersion(kmsg.DeleteGroups)
	req.Groups = []string{"g"}
	requireCode(t, nil, h.do(req).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode)
	recs = groupRecords(h, "g")
	require.Nil(t, recs[len(recs)-1], "tombstoned")

	h.restart()
	require.Equal(t, "Dead", h.describeGroup("g").State)
	lg := kmsg.NewPtrListGroupsRequest()
	require.Empty(t, h.do(lg).(*kmsg.ListGroupsResponse).Groups)
	a2 := h.member(1, "g", "t")
	j := a2.sendJoin()
	h.waitMs(3000)
	require.Equal(t, int32(1), a2.joined(j).Generation, "a new group")
}

func TestSweptEmptyGroupIsTombstoned(t *testing.T) {
	h := newHarness(t, expiryOpts)
	h.mustCreate("t", 1)
	a := h.stableMember(1, "g", "t")
	requireCode(t, nil, a.leave())
	h.waitMs(61_000) // an expiry pass: Empty, no offsets
	recs := groupRecords(h, "g")
	require.Nil(t, recs[len(recs)-1], "tombstoned")
	lg := kmsg.NewPtrListGroupsRequest()
	require.Empty(t, h.do(lg).(*kmsg.ListGroupsResponse).Groups)
	h.restart()
	require.Empty(t, h.do(lg).(*kmsg.ListGroupsResponse).Groups, "does not come back")
}
