package broker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// expiryOpts: groups form at once, offsets are kept 10 minutes, checked every minute.
func expiryOpts(c *Config) {
	groupOpts(c)
	require.NoError(nil, c.Set("offsets.retention.minutes", "10"))
	require.NoError(nil, c.Set("offsets.retention.check.interval.ms", "60000"))
}

func (h *harness) requireOffset(want int64, group, topic string, part int32,
	msgAndArgs ...any) {
	h.t.Helper()
	off, code := h.fetchOffset(maxVersion(kmsg.OffsetFetch), group, topic, part)
	requireCode(h.t, nil, code, msgAndArgs...)
	require.Equal(h.t, want, off, msgAndArgs...)
}

// stableMember joins a group alone and syncs.
func (h *harness) stableMember(conn uint64, group string, topics ...string) *member {
	m := h.member(conn, group, topics...)
	requireCode(h.t, nil, m.joined(m.sendJoin()).ErrorCode)
	requireCode(h.t, nil, m.synced(m.sendSync(nil)).ErrorCode)
	return m
}

// keepAlive heartbeats every 3 s for d.
func (m *member) keepAlive(d time.Duration) {
	m.h.t.Helper()
	for end := m.h.now.AddMillis(d.Milliseconds()); m.h.now < end; {
		m.h.waitMs(3000)
		requireCode(m.h.t, nil, m.heartbeat())
	}
}

func (h *harness) groupIDs() []string {
	var ids []string
	for _, g := range h.do(kmsg.NewPtrListGroupsRequest()).(*kmsg.ListGroupsResponse).Groups {
		ids = append(ids, g.Group)
	}
	return ids
}

func TestGroupSettingsOffsetRetention(t *testing.T) {
	c := DefaultConfig()
	require.Equal(t, int64(7*24*3600*1000), c.Groups.Coordinator.OffsetsRetentionMs)
	require.Equal(t, int64(600_000), c.Groups.RetentionCheckIntervalMs)
	require.NoError(t, c.Set("offsets.retention.minutes", "5"))
	require.NoError(t, c.Set("offsets.retention.check.interval.ms", "1000"))
	require.Equal(t, int64(300_000), c.Groups.Coordinator.OffsetsRetentionMs)
	require.Equal(t, int64(1000), c.Groups.RetentionCheckIntervalMs)
	require.Error(t, c.Set("offsets.retention.minutes", "0"))
	require.Error(t, c.Set("offsets.retention.check.interval.ms", "-1"))
	require.Contains(t, SettingNames(), "offsets.retention.minutes")
	require.Contains(t, SettingNames(), "offsets.retention.check.interval.ms")
}

func TestOffsetsKeptWhileMembersLiveAndExpireAfterTheGroupEmpties(t *testing.T) {
	h := newHarness(t, expiryOpts)
	h.mustCreate("t", 1)
	a := h.stableMember(1, "g", "t")
	requireCode(t, nil, commitCodes(h.do(commitReq("g", a.gen, a.id, "t", int32(0),
		int64(42))))[0])

	a.keepAlive(15 * time.Minute) // well past the retention since the commit
	h.requireOffset(42, "g", "t", 0, "a group with a live member keeps its offsets")

	requireCode(t, nil, a.leave())
	require.Equal(t, "Empty", h.describeGroup("g").State)
	h.waitMs(9 * 60_000)
	h.requireOffset(42, "g", "t", 0, "retention counts from when the group became empty")
	h.waitMs(2 * 60_000)
	h.requireOffset(-1, "g", "t", 0, "expired")
	require.Equal(t, "Dead", h.describeGroup("g").State, "an empty group without offsets goes")
	require.Empty(t, h.groupIDs())

	h.restart()
	h.requireOffset(-1, "g", "t", 0, "the tombstone is durable")
}

func TestSimpleGroupOffsetsExpireByCommitTime(t *testing.T) {
	h := newHarness(t, expiryOpts)
	h.mustCreate("t", 2)
	requireCode(t, nil, commitCodes(h.do(commitReq("s", -1, "", "t", int32(0), int64(1))))[0])
	h.waitMs(5 * 60_000)
	requireCode(t, nil, commitCodes(h.do(commitReq("s", -1, "", "t", int32(1), int64(2))))[0])
	h.waitMs(6 * 60_000)
	h.requireOffset(-1, "s", "t", 0, "committed 11 minutes ago")
	h.requireOffset(2, "s", "t", 1, "committed 6 minutes ago")
	require.Equal(t, []string{"s"}, h.groupIDs())
	h.waitMs(5 * 60_000)
	h.requireOffset(-1, "s", "t", 1)
	require.Empty(t, h.groupIDs())
}

func TestCommitRetentionTimeOverridesRetention(t *testing.T) {
	h := newHarness(t, expiryOpts)
	h.mustCreate("t", 3)
	commit := func(v int16, retentionMs int64, part int32) {
		req := commitReq("s", -1, "", "t", part, int64(100+part))
		req.Version, req.RetentionTimeMillis = v, retentionMs
		requireCode(t, nil, commitCodes(h.do(req))[0])
	}
	commit(2, 60_000, 0)    // one minute
	commit(3, -1, 1)        // the broker's ten
	commit(4, 30*60_000, 2) // thirty minutes
	h.waitMs(2 * 60_000)
	h.requireOffset(-1, "s", "t", 0)
	h.requireOffset(101, "s", "t", 1)
	h.requireOffset(102, "s", "t", 2)
	h.restart() // the expiry time is in the record
	h.waitMs(10 * 60_000)
	h.requireOffset(-1, "s", "t", 1)
	h.requireOffset(102, "s", "t", 2, "kept past the broker's retention")
	h.waitMs(19 * 60_000)
	h.requireOffset(-1, "s", "t", 2)
}

func TestOffsetExpiryAcrossRestarts(t *testing.T) {
	h := newHarness(t, expiryOpts)
	h.mustCreate("t", 1)
	a := h.stableMember(1, "g", "t")
	requireCode(t, nil, commitCodes(h.do(commitReq("g", a.gen, a.id, "t", int32(0),
		int64(7))))[0])
	a.keepAlive(3 * time.Minute)
	requireCode(t, nil, a.leave())
	requireCode(t, nil, commitCodes(h.do(commitReq("other", -1, "", "t", int32(0),
		int64(5))))[0])

	h.waitMs(60_000)
	h.restart()
	h.requireOffset(7, "g", "t", 0, "a restart before expiry keeps the offsets")
	h.requireOffset(5, "other", "t", 0)
	// The group's metadata record kept the time it became Empty (3 minutes after the
	// commit): retention counts from then, not from the latest commit.
	h.waitMs(5 * 60_000)
	h.requireOffset(7, "g", "t", 0)
	h.waitMs(2 * 60_000)
	h.requireOffset(7, "g", "t", 0, "the empty time came back with the group")
	h.restart()
	h.requireOffset(7, "g", "t", 0)

	// "other" was committed 8 minutes ago. If the tombstone of its expiry is not durable
	// when the node crashes, the offset is still there after the restart, and expires
	// again at the next check.
	h.waitMs(60_000)
	h.requireOffset(5, "other", "t", 0)
	h.holdSyncs = true
	h.waitMs(60_000)
	h.requireOffset(5, "other", "t", 0, "not deleted before the tombstone is durable")
	h.crash()
	h.holdSyncs = false
	h.requireOffset(5, "other", "t", 0)
	h.waitMs(60_000)
	h.requireOffset(-1, "other", "t", 0)
	h.requireOffset(-1, "g", "t", 0, "10 minutes after the group emptied")
	h.crash()
	h.requireOffset(-1, "other", "t", 0)
	h.requireOffset(-1, "g", "t", 0, "expired offsets do not come back")
}

func TestExpiryNeverOvertakesACommitInFlight(t *testing.T) {
	h := newHarness(t, expiryOpts)
	h.mustCreate("t", 1)
	requireCode(t, nil, commitCodes(h.do(commitReq("s", -1, "", "t", int32(0), int64(1))))[0])
	h.waitMs(9*60_000 + 30_000)
	h.holdSyncs = true
	id := h.send(commitReq("s", -1, "", "t", int32(0), int64(2)))
	h.waitMs(60_000) // the check runs while the commit waits for its fsync
	h.holdSyncs = false
	h.settle()
	resp, ok := h.reply(id)
	require.True(t, ok)
	requireCode(t, nil, commitCodes(resp)[0])
	h.requireOffset(2, "s", "t", 0, "the acknowledged commit stands")
	h.restart()
	h.requireOffset(2, "s", "t", 0, "and no tombstone follows it in the log")
	h.waitMs(10 * 60_000)
	h.requireOffset(-1, "s", "t", 0)
}

func TestStableConsumerGroupLosesOnlyUnsubscribedOffsets(t *testing.T) {
	h := newHarness(t, expiryOpts)
	h.mustCreate("sub", 1)
	h.mustCreate("old", 1)
	requireCode(t, nil, commitCodes(h.do(commitReq("g", -1, "", "sub", int32(0), int64(1),
		"old", int32(0), int64(2))))[0])
	a := h.stableMember(1, "g", "sub")
	a.keepAlive(11 * time.Minute)
	h.requireOffset(-1, "g", "old", 0, "no member subscribes to it")
	h.requireOffset(1, "g", "sub", 0)
	require.Equal(t, "Stable", h.describeGroup("g").State)
}

func TestCommitV1TimestampIsIgnored(t *testing.T) {
	h := newHarness(t, expiryOpts)
	h.mustCreate("t", 1)
	req := commitReq("s", -1, "", "t", int32(0), int64(3))
	req.Version = 1
	req.Topics[0].Partitions[0].Timestamp = 1 // 1970: long expired, if believed
	requireCode(t, nil, commitCodes(h.do(req))[0])
	h.waitMs(2 * 60_000)
	h.requireOffset(3, "s", "t", 0, "the broker's commit time counts")
	h.waitMs(9 * 60_000)
	h.requireOffset(-1, "s", "t", 0)
}
