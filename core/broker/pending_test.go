package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// findPending returns the entries of kind k that answer request id (0: the broker's
// own work).
func findPending(ps []PendingOp, k PendingKind, id uint64) []PendingOp {
	var out []PendingOp
	for _, p := range ps {
		if p.Kind == k && p.ID == id && p.HasRequest == (id != 0) {
			out = append(out, p)
		}
	}
	return out
}

// Pending lists each kind of parked work with what it waits for and whom it answers:
// an acks=all produce waiting on its fsync, a parked fetch, a CreateTopics waiting on
// its metadata answer, an InitProducerId waiting on its block, an offset commit
// waiting on its durability; then it all drains and Pending is empty.
func TestPendingListsParkedWorkAndDrains(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	h.do(commitReq("g", -1, "", "t", int32(0), int64(0))) // creates the offsets topic
	h.settle()
	require.Empty(t, h.b.Pending(), "a settled broker waits on nothing")

	h.holdMeta, h.holdSyncs = true, true
	produce := h.send(produceReq(-1, "t", 0, values("a")))
	fetch := h.sendOn(2, fetchReq("t", 0, 1, 30_000, 1<<20))
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Version, ct.TimeoutMillis = maxVersion(kmsg.CreateTopics), 5000
	ct.Topics = append(ct.Topics, ctTopic("u", 2, 1))
	create := h.sendOn(3, ct)
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.Version = maxVersion(kmsg.InitProducerID)
	pid := h.sendOn(4, ip)
	commit := h.sendOn(5, commitReq("g", -1, "", "t", int32(0), int64(1)))

	ps := h.b.Pending()
	var lines []string
	for _, p := range ps {
		lines = append(lines, p.String())
	}
	t.Logf("pending:\n%s", strings.Join(lines, "\n"))
	require.Equal(t, ps, h.b.Pending(), "the report is deterministic")

	pr := findPending(ps, PendingProduce, produce)
	require.Len(t, pr, 1)
	require.Contains(t, pr[0].Waits, "t-0 hwm>=1 (sync token=")
	require.Contains(t, pr[0].Waits, "timer=")
	require.Equal(t, uint64(1), pr[0].Conn)

	fe := findPending(ps, PendingFetch, fetch)
	require.Len(t, fe, 1)
	require.Contains(t, fe[0].Waits, "min_bytes=1048576")
	require.Equal(t, uint64(2), fe[0].Conn)

	ad := findPending(ps, PendingAdmin, create)
	require.Len(t, ad, 1)
	require.Equal(t, "CreateTopics", ad[0].What)
	require.Contains(t, ad[0].Waits, "proposing: 1 of 1 answers, tokens [")
	cp := findPending(ps, PendingProposal, create)
	require.Len(t, cp, 1)
	require.Contains(t, cp[0].Waits, `TopicCreated "u"`)

	require.Len(t, findPending(ps, PendingProducerID, pid), 1)
	blk := findPending(ps, PendingProposal, 0)
	require.Len(t, blk, 1, "the producer-id block is the broker's own proposal")
	require.Equal(t, "producer-id block", blk[0].What)

	oc := findPending(ps, PendingOffsetWrite, commit)
	require.Len(t, oc, 1)
	require.Equal(t, "OffsetCommit", oc[0].What)
	require.Contains(t, oc[0].Waits, `group="g" records=1 waits hwm>=`)
	require.Contains(t, oc[0].Waits, "(sync token=")

	require.Len(t, findPending(ps, PendingSync, 0), 2, "t-0 and the group's offsets partition")

	h.holdMeta, h.holdSyncs = false, false
	h.settle()
	for _, id := range []uint64{produce, create, pid, commit} {
		_, ok := h.reply(id)
		require.True(t, ok, "request %d answered", id)
	}
	ps = h.b.Pending()
	require.Len(t, ps, 1, "only the long poll is left: %v", ps)
	require.Equal(t, PendingFetch, ps[0].Kind)

	h.advance(31 * time.Second)
	_, ok := h.reply(fetch)
	require.True(t, ok)
	require.Empty(t, h.b.Pending(), "everything drained")
}

// A creation of more partitions than one step opens is reported as logs to open, with
// the CreateTopics waiting on them.
func TestPendingShowsLogsToOpen(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Limits.OpenLogsPerStep = 2 })
	h.holdTimers = true
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Version, ct.TimeoutMillis = maxVersion(kmsg.CreateTopics), 5000
	ct.Topics = append(ct.Topics, ctTopic("big", 7, 1))
	id := h.send(ct)
	h.settle()
	ps := h.b.Pending()
	ad := findPending(ps, PendingAdmin, id)
	require.Len(t, ad, 1, "%v", ps)
	require.Equal(t, "opening-logs: 5 logs to open", ad[0].Waits)
	op := findPending(ps, PendingOpen, 0)
	require.Len(t, op, 1)
	require.Equal(t, "5 logs to open, 1 operations waiting", op[0].Waits)
	require.Len(t, findPending(ps, PendingTimer, 0), 1, "the next chunk's timer")

	h.holdTimers = false
	h.settle()
	_, ok := h.reply(id)
	require.True(t, ok)
	require.Empty(t, h.b.Pending())
}

// A JoinGroup held by its group (the initial rebalance delay) is listed with its group,
// member and connection, and leaves the report once the group answers it.
func TestPendingListsParkedJoinGroup(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Groups.Coordinator.InitialRebalanceDelayMs = 3000 })
	h.mustCreate("t", 1)
	m := h.member(7, "g", "t")
	id := m.sendJoin()
	h.settle()
	gr := findPending(h.b.Pending(), PendingGroup, id)
	require.Len(t, gr, 1, "%v", h.b.Pending())
	require.Equal(t, "JoinGroup", gr[0].What)
	require.Equal(t, uint64(7), gr[0].Conn)
	require.Contains(t, gr[0].Waits, `group "g" member "`+m.id+`"`)

	h.advance(4 * time.Second)
	m.joined(id)
	require.Empty(t, findPending(h.b.Pending(), PendingGroup, id), "answered")
}

// A DeleteTopics waiting for its offset tombstones shows the writes it waits on, and
// an admin request behind it shows as queued.
func TestPendingShowsAdminPhasesAndTombstones(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	h.do(commitReq("g", -1, "", "t", int32(0), int64(3)))
	h.settle()

	h.holdSyncs = true
	del := h.send(deleteReq(maxVersion(kmsg.DeleteTopics), "t"))
	h.deliverMeta()
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Version, ct.TimeoutMillis = maxVersion(kmsg.CreateTopics), 5000
	ct.Topics = append(ct.Topics, ctTopic("u", 1, 1))
	create := h.sendOn(2, ct)
	create2 := h.sendOn(3, ct)

	ps := h.b.Pending()
	ad := findPending(ps, PendingAdmin, del)
	require.Len(t, ad, 1, "%v", ps)
	require.Equal(t, "DeleteTopics", ad[0].What)
	require.Equal(t, "writing-offsets: 1 offset writes", ad[0].Waits)
	tw := findPending(ps, PendingOffsetWrite, del)
	require.Len(t, tw, 1)
	require.Equal(t, "tombstones(DeleteTopics)", tw[0].What)
	queued := findPending(ps, PendingAdmin, create)
	require.Len(t, queued, 1)
	require.Equal(t, "queued behind 1 operations", queued[0].Waits)
	require.Equal(t, "queued behind 2 operations", findPending(ps, PendingAdmin, create2)[0].Waits)

	h.holdSyncs = false
	h.settle()
	for _, id := range []uint64{del, create, create2} {
		_, ok := h.reply(id)
		require.True(t, ok)
	}
	require.Empty(t, h.b.Pending())
}
