package group

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
)

// stableTwo forms generation 1 of members a (leader) and b and returns the metadata
// write the leader's sync asked for, not yet reported.
func stableTwo(t *testing.T, f *fixture) (a, b string, w MetadataWrite, sa, sb *[]SyncResult) {
	a, ja := f.newMember()
	b, _ = f.newMember()
	f.advance(3000 * ms) // the initial delay gathers both
	require.Len(t, *ja, 1)
	sb = &[]SyncResult{}
	f.g.Sync(f.now, SyncRequest{MemberID: b, Generation: 1},
		func(r SyncResult) { *sb = append(*sb, r) })
	sa = &[]SyncResult{}
	f.g.Sync(f.now, SyncRequest{MemberID: a, Generation: 1, Assignments: []Assignment{
		{MemberID: a, Data: []byte("A")}, {MemberID: b, Data: []byte("B")}}},
		func(r SyncResult) { *sa = append(*sa, r) })
	w, ok := f.g.TakeMetadataWrite(f.now)
	require.True(t, ok)
	_, again := f.g.TakeMetadataWrite(f.now)
	require.False(t, again, "one record per settled generation")
	return a, b, w, sa, sb
}

func TestSyncAnsweredOnceTheRecordIsDurable(t *testing.T) {
	f := newFixture(t, 3000)
	_, _, w, sa, sb := stableTwo(t, f)
	require.Empty(t, *sa, "the leader waits for the record too")
	require.Empty(t, *sb)
	require.Equal(t, CompletingRebalance, f.g.State())
	require.Nil(t, f.g.Durable())
	f.g.MetadataWritten(f.now, w, 0)
	require.Equal(t, []byte("A"), (*sa)[0].Assignment)
	require.Equal(t, []byte("B"), (*sb)[0].Assignment)
	require.Equal(t, Stable, f.g.State())
	require.Equal(t, w.Value, f.g.Durable())
}

func TestSyncRecordFailureRebalances(t *testing.T) {
	f := newFixture(t, 3000)
	_, _, w, sa, sb := stableTwo(t, f)
	f.g.MetadataWritten(f.now, w, kerr.NotCoordinator.Code)
	require.Equal(t, kerr.NotCoordinator.Code, (*sa)[0].Err)
	require.Equal(t, kerr.NotCoordinator.Code, (*sb)[0].Err)
	require.Equal(t, PreparingRebalance, f.g.State())
	require.Nil(t, f.g.Durable())
}

func TestGroupRecordRoundTripsThroughKafkaLayout(t *testing.T) {
	f := newFixture(t, 3000)
	a, b, w, _, _ := stableTwo(t, f)
	f.g.MetadataWritten(f.now, w, 0)

	key := EncodeGroupKey("g")
	require.Equal(t, []byte{0, 2, 0, 1, 'g'}, key, "Kafka's key v2")
	id, ok, err := DecodeGroupKey(key)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "g", id)
	_, ok, _ = DecodeGroupKey(EncodeKey("g", core.TopicPartition{Topic: "t"}))
	require.False(t, ok, "an offset commit key is not a group key")
	_, _, err = DecodeKey(key)
	require.ErrorIs(t, err, ErrNotOffsetRecord)

	v, err := DecodeGroupValue(w.Value)
	require.NoError(t, err)
	require.Equal(t, int16(3), v.Version)
	require.Equal(t, "consumer", v.ProtocolType)
	require.Equal(t, int32(1), v.Generation)
	require.Equal(t, "range", *v.Protocol)
	require.Equal(t, a, *v.Leader)
	require.Equal(t, f.now.Millis(), v.CurrentStateTimestamp)
	require.Len(t, v.Members, 2)
	require.Equal(t, b, v.Members[1].MemberID)
	require.Equal(t, "c", v.Members[1].ClientID)
	require.Equal(t, int32(10_000), v.Members[1].SessionTimeoutMillis)
	require.Equal(t, int32(30_000), v.Members[1].RebalanceTimeoutMillis)
	require.Equal(t, []byte("md-range"), v.Members[1].Subscription)
	require.Equal(t, []byte("B"), v.Members[1].Assignment)

	// Kafka's own encoder reads the same bytes back.
	again := v
	require.Equal(t, w.Value, again.AppendTo(nil))

	_, err = DecodeGroupValue(w.Value[:len(w.Value)-3])
	require.Error(t, err)
	_, err = DecodeGroupValue([]byte{0, 9})
	require.Error(t, err, "an unknown version")
}

func TestRestoredGroupIsStableAndSessionsRestart(t *testing.T) {
	f := newFixture(t, 3000)
	a, b, w, _, _ := stableTwo(t, f)
	f.g.MetadataWritten(f.now, w, 0)
	v, err := DecodeGroupValue(w.Value)
	require.NoError(t, err)

	// A new coordinator loads the record a minute later: the old sessions would have
	// run out, but they restart at load.
	load := f.now + 60_000*ms
	c := NewCoordinator(DefaultConfig(), &testRand{s: 99})
	c.ApplyOffset("g", core.TopicPartition{Topic: "t"}, &Offset{Offset: 3})
	c.Restore(load, "g", &v, w.Value)
	g := c.Group("g")
	require.Equal(t, Stable, g.State())
	require.Equal(t, int32(1), g.Generation())
	require.Equal(t, a, g.Leader())
	require.Equal(t, "range", g.Protocol())
	require.Equal(t, w.Value, g.Durable())
	at, ok := g.NextDeadline()
	require.True(t, ok)
	require.Equal(t, load+10_000*ms, at)
	d := g.Describe()
	require.Equal(t, []byte("B"), d.Members[1].Assignment)
	require.Equal(t, []byte("md-range"), d.Members[1].Metadata)
	_, known := c.Offset("g", core.TopicPartition{Topic: "t"})
	require.True(t, known, "offsets loaded before the record are kept")

	g.Tick(load + 9_000*ms)
	require.Zero(t, g.Heartbeat(load+9_000*ms, b, nil, 1))
	require.Equal(t, kerr.IllegalGeneration.Code, g.Heartbeat(load, b, nil, 2))
	var got []SyncResult
	g.Sync(load+9_000*ms, SyncRequest{MemberID: b, Generation: 1}, func(r SyncResult) {
		got = append(got, r)
	})
	require.Equal(t, []byte("B"), got[0].Assignment)
	// a never heartbeats: its session, restarted at load, runs out.
	g.Tick(load + 10_000*ms)
	require.Equal(t, PreparingRebalance, g.State())
}

func TestRestoreEmptyAndTombstone(t *testing.T) {
	c := NewCoordinator(DefaultConfig(), &testRand{})
	load := core.Time(0).AddMillis(2_000_000)
	v := kmsg.NewGroupMetadataValue()
	v.Version, v.ProtocolType, v.Generation = 3, "consumer", 4
	v.CurrentStateTimestamp = 1_000_000
	c.Restore(load, "e", &v, v.AppendTo(nil))
	g := c.Group("e")
	require.Equal(t, Empty, g.State())
	require.Equal(t, int32(4), g.Generation(), "rejoining members continue at 5")
	require.True(t, g.emptyKnown)
	require.Equal(t, int64(1_000_000), g.emptySince.Millis())

	// A later tombstone deletes it; offsets alone would keep a fresh group.
	c.Restore(load, "e", nil, nil)
	require.Nil(t, c.Group("e"))
	c.ApplyOffset("o", core.TopicPartition{Topic: "t"}, &Offset{Offset: 1})
	c.Restore(load, "o", &v, v.AppendTo(nil))
	c.Restore(load, "o", nil, nil)
	require.NotNil(t, c.Group("o"))
	require.Zero(t, c.Group("o").Generation())
}

func TestRestoreLeavesALiveGroupAlone(t *testing.T) {
	f := newFixture(t, 3000)
	_, _, w, _, _ := stableTwo(t, f)
	v, err := DecodeGroupValue(w.Value)
	require.NoError(t, err)
	v.Generation = 9
	f.c.Restore(f.now, "g", &v, v.AppendTo(nil))
	require.Same(t, f.g, f.c.Group("g"))
	require.Equal(t, int32(1), f.g.Generation())
	f.g.MetadataWritten(f.now, w, 0)
}

func TestJoinRefusesWhatTheRecordCannotHold(t *testing.T) {
	f := newFixture(t, 0)
	req := f.joinReq("")
	req.ClientID = string(make([]byte, 1<<15))
	got := f.join(req)
	require.Equal(t, kerr.InvalidRequest.Code, (*got)[0].Err)
}
