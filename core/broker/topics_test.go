package broker

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
)

func TestCreateTopicsThenMetadata(t *testing.T) {
	h := newHarness(t)
	resp := h.createTopics(ctTopic("orders", 4, 1, "retention.ms=1000"), ctTopic("dflt", -1, -1))
	o := resp.Topics[0]
	requireCode(t, nil, o.ErrorCode, deref(o.ErrorMessage))
	require.Equal(t, "orders", o.Topic)
	require.EqualValues(t, 4, o.NumPartitions)
	require.EqualValues(t, 1, o.ReplicationFactor)
	require.Equal(t, h.b.image.Topic("orders").ID, o.TopicID)
	require.Equal(t, byte(0x40), o.TopicID[6]&0xf0, "version-4 UUID")
	require.Len(t, o.Configs, len(TopicConfigDefs))
	for _, c := range o.Configs {
		if c.Name == "retention.ms" {
			require.Equal(t, "1000", deref(c.Value))
			require.EqualValues(t, kmsg.ConfigSourceDynamicTopicConfig, c.Source)
		} else {
			require.EqualValues(t, kmsg.ConfigSourceDefaultConfig, c.Source, c.Name)
		}
	}
	require.EqualValues(t, 3, resp.Topics[1].NumPartitions, "-1 → num.partitions")
	require.NotEqual(t, o.TopicID, resp.Topics[1].TopicID)

	mt := h.topicMeta("orders")
	requireCode(t, nil, mt.ErrorCode)
	require.Len(t, mt.Partitions, 4)
	for p := int32(0); p < 4; p++ {
		require.True(t, h.hosted("orders", p))
	}
	// The replica got the override.
	r := h.b.replicas[core.TopicPartition{Topic: "orders", Partition: 0}]
	require.NotNil(t, r)
	require.EqualValues(t, 1000, h.b.replicaConfig(h.b.image.Topic("orders")).RetentionMs)
}

func TestCreateTopicsErrors(t *testing.T) {
	assign := func(parts ...[]int32) []kmsg.CreateTopicsRequestTopicReplicaAssignment {
		var out []kmsg.CreateTopicsRequestTopicReplicaAssignment
		for i, r := range parts {
			out = append(out, kmsg.CreateTopicsRequestTopicReplicaAssignment{
				Partition: int32(i), Replicas: r})
		}
		return out
	}
	withAssign := func(tp kmsg.CreateTopicsRequestTopic,
		a []kmsg.CreateTopicsRequestTopicReplicaAssignment) kmsg.CreateTopicsRequestTopic {
		tp.ReplicaAssignment = a
		return tp
	}
	tests := []struct {
		name  string
		topic kmsg.CreateTopicsRequestTopic
		want  *kerr.Error
		msg   string // substring of the error message
	}{
		{"exists", ctTopic("existing", 1, 1), kerr.TopicAlreadyExists, "already exists"},
		{"empty name", ctTopic("", 1, 1), kerr.InvalidTopicException, "empty"},
		{"bad char", ctTopic("a b", 1, 1), kerr.InvalidTopicException, "illegal"},
		{"dotdot", ctTopic("..", 1, 1), kerr.InvalidTopicException, ".."},
		{"too long", ctTopic(strings.Repeat("x", 250), 1, 1), kerr.InvalidTopicException, "249"},
		{"collides", ctTopic("my.topic", 1, 1), kerr.InvalidTopicException, "collides"},
		{"zero partitions", ctTopic("t", 0, 1), kerr.InvalidPartitions, "non-positive"},
		{"negative partitions", ctTopic("t", -2, 1), kerr.InvalidPartitions, ""},
		{"too many partitions", ctTopic("t", 10_001, 1), kerr.InvalidPartitions, "limit"},
		{"rf 3", ctTopic("t", 1, 3), kerr.InvalidReplicationFactor, "available brokers: 1"},
		{"rf 0", ctTopic("t", 1, 0), kerr.InvalidReplicationFactor, ""},
		{"unknown config", ctTopic("t", 1, 1, "no.such=1"), kerr.InvalidConfig, "no.such"},
		{"bad value", ctTopic("t", 1, 1, "retention.ms=soon"), kerr.InvalidConfig, "soon"},
		{"out of range", ctTopic("t", 1, 1, "segment.bytes=1"), kerr.InvalidConfig, "segment"},
		{"config twice", ctTopic("t", 1, 1, "retention.ms=1", "retention.ms=2"),
			kerr.InvalidConfig, "more than once"},
		{"assignment and count", withAssign(ctTopic("t", 1, -1), assign([]int32{1})),
			kerr.InvalidRequest, "Both"},
		{"assignment other broker", withAssign(ctTopic("t", -1, -1), assign([]int32{2})),
			kerr.InvalidReplicaAssignment, "one broker"},
		{"assignment two replicas", withAssign(ctTopic("t", -1, -1), assign([]int32{1, 1})),
			kerr.InvalidReplicaAssignment, ""},
		{"assignment gap", withAssign(ctTopic("t", -1, -1),
			[]kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 1, Replicas: []int32{1}}}),
			kerr.InvalidReplicaAssignment, "consecutive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.mustCreate("existing", 1)
			h.mustCreate("my_topic", 1)
			before := len(h.env.committed)
			rt := h.createTopics(tc.topic).Topics[0]
			requireCode(t, tc.want, rt.ErrorCode)
			require.Contains(t, deref(rt.ErrorMessage), tc.msg)
			require.EqualValues(t, -1, rt.NumPartitions)
			require.Len(t, h.env.committed, before, "nothing proposed")
			if tc.topic.Topic != "existing" {
				require.Nil(t, h.b.image.Topic(tc.topic.Topic))
			}
		})
	}
}

func TestCreateTopicsWithAssignment(t *testing.T) {
	h := newHarness(t)
	tp := ctTopic("t", -1, -1)
	tp.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{
		{Partition: 1, Replicas: []int32{1}}, {Partition: 0, Replicas: []int32{1}}}
	rt := h.createTopics(tp).Topics[0]
	requireCode(t, nil, rt.ErrorCode, deref(rt.ErrorMessage))
	require.EqualValues(t, 2, h.b.image.Topic("t").Partitions)
}

func TestCreateTopicsDuplicatesAndMixedResults(t *testing.T) {
	h := newHarness(t)
	resp := h.createTopics(ctTopic("dup", 1, 1), ctTopic("ok", 1, 1), ctTopic("dup", 2, 1),
		ctTopic("bad", 0, 1))
	requireCode(t, kerr.InvalidRequest, resp.Topics[0].ErrorCode)
	requireCode(t, nil, resp.Topics[1].ErrorCode)
	requireCode(t, kerr.InvalidRequest, resp.Topics[2].ErrorCode)
	requireCode(t, kerr.InvalidPartitions, resp.Topics[3].ErrorCode)
	require.Equal(t, []string{"ok"}, h.b.image.TopicNames())

	// A second create of the same topic: TOPIC_ALREADY_EXISTS, the first one's ID stays.
	id := h.b.image.Topic("ok").ID
	rt := h.createTopics(ctTopic("ok", 5, 1)).Topics[0]
	requireCode(t, kerr.TopicAlreadyExists, rt.ErrorCode)
	require.Equal(t, id, h.b.image.Topic("ok").ID)
	require.EqualValues(t, 1, h.b.image.Topic("ok").Partitions)
}

func TestCreateTopicsConcurrentSameName(t *testing.T) {
	// Two requests for one topic before either commits: exactly one wins.
	h := newHarness(t)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = maxVersion(kmsg.CreateTopics)
	req.Topics = []kmsg.CreateTopicsRequestTopic{ctTopic("t", 1, 1)}
	id1 := h.send(req)
	id2 := h.send(req)
	_, answered := h.reply(id1)
	require.False(t, answered, "answered before commit")
	h.settle()
	r1, ok1 := h.reply(id1)
	r2, ok2 := h.reply(id2)
	require.True(t, ok1)
	require.True(t, ok2)
	requireCode(t, nil, r1.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode)
	requireCode(t, kerr.TopicAlreadyExists, r2.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode)
	require.Len(t, h.env.committed, 1)
}

func TestCreateTopicsValidateOnly(t *testing.T) {
	h := newHarness(t)
	resp := h.createTopicsAt(maxVersion(kmsg.CreateTopics), true, ctTopic("t", 2, 1),
		ctTopic("t2", 0, 1))
	requireCode(t, nil, resp.Topics[0].ErrorCode)
	require.EqualValues(t, 2, resp.Topics[0].NumPartitions)
	require.Equal(t, [16]byte{}, resp.Topics[0].TopicID)
	requireCode(t, kerr.InvalidPartitions, resp.Topics[1].ErrorCode)
	require.Empty(t, h.env.committed)
	require.Nil(t, h.b.image.Topic("t"))
}

func TestCreateTopicsCommitFailure(t *testing.T) {
	h := newHarness(t)
	h.env.metaErr = errors.New("metadata log broken")
	rt := h.createTopics(ctTopic("t", 1, 1)).Topics[0]
	requireCode(t, kerr.RequestTimedOut, rt.ErrorCode)
	require.Contains(t, deref(rt.ErrorMessage), "metadata log broken")
	require.Equal(t, [16]byte{}, rt.TopicID)
	require.Nil(t, h.b.image.Topic("t"))
}

func TestCreateTopicsEveryVersion(t *testing.T) {
	h := newHarness(t)
	for _, v := range versions(kmsg.CreateTopics) {
		name := "t" + string(rune('a'+v))
		dups := h.createTopicsAt(v, false, ctTopic(name, 2, -1), ctTopic(name, 1, 1))
		requireCode(t, kerr.InvalidRequest, dups.Topics[0].ErrorCode, "v%d", v)
		requireCode(t, kerr.InvalidRequest, dups.Topics[1].ErrorCode, "v%d", v)
		resp := h.createTopicsAt(v, false, ctTopic(name, 2, -1, "retention.ms=5"),
			ctTopic("bad name", 1, 1))
		ok, bad := resp.Topics[0], resp.Topics[1]
		requireCode(t, nil, ok.ErrorCode, "v%d", v)
		require.Equal(t, name, ok.Topic)
		requireCode(t, kerr.InvalidTopicException, bad.ErrorCode, "v%d", v)
		require.EqualValues(t, 2, h.b.image.Topic(name).Partitions)
		require.Equal(t, "5", deref(h.describeTopic(name)["retention.ms"].Value))
		if v >= 1 {
			require.Contains(t, deref(bad.ErrorMessage), "illegal", "v%d", v)
		}
		if v >= 5 {
			require.EqualValues(t, 2, ok.NumPartitions, "v%d", v)
			require.NotEmpty(t, ok.Configs, "v%d", v)
		}
		if v >= 7 {
			require.Equal(t, h.b.image.Topic(name).ID, ok.TopicID, "v%d", v)
		}
	}
}

func deleteReq(v int16, names ...string) *kmsg.DeleteTopicsRequest {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version, req.TimeoutMillis = v, 5000
	for _, n := range names {
		if v >= 6 {
			req.Topics = append(req.Topics, kmsg.DeleteTopicsRequestTopic{Topic: kmsg.StringPtr(n)})
		} else {
			req.TopicNames = append(req.TopicNames, n)
		}
	}
	return req
}

func TestDeleteTopics(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("gone", 2)
	h.mustCreate("stays", 1)
	resp := h.deleteTopics(deleteReq(maxVersion(kmsg.DeleteTopics), "gone", "missing", "gone"))
	require.Len(t, resp.Topics, 3)
	requireCode(t, nil, resp.Topics[0].ErrorCode)
	requireCode(t, kerr.UnknownTopicOrPartition, resp.Topics[1].ErrorCode)
	requireCode(t, nil, resp.Topics[2].ErrorCode, "named twice: deleted once, both succeed")
	require.Equal(t, []string{"stays"}, h.b.image.TopicNames())
	require.False(t, h.hosted("gone", 0))
	require.ElementsMatch(t, []core.TopicPartition{{Topic: "gone", Partition: 0},
		{Topic: "gone", Partition: 1}}, h.env.removed)

	mt := h.topicMeta("gone")
	requireCode(t, kerr.UnknownTopicOrPartition, mt.ErrorCode)

	// Recreating gives a new topic with a new ID and fresh logs.
	h.mustCreate("gone", 1)
	require.True(t, h.hosted("gone", 0))
}

func TestDeleteTopicsByID(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	id := h.b.image.Topic("t").ID
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 6
	req.Topics = []kmsg.DeleteTopicsRequestTopic{{TopicID: id}, {TopicID: [16]byte{9}}}
	resp := h.deleteTopics(req)
	requireCode(t, nil, resp.Topics[0].ErrorCode)
	require.Equal(t, "t", deref(resp.Topics[0].Topic))
	require.Equal(t, id, resp.Topics[0].TopicID)
	requireCode(t, kerr.UnknownTopicID, resp.Topics[1].ErrorCode)
	require.Empty(t, h.b.image.TopicNames())
}

func TestDeleteTopicsEveryVersion(t *testing.T) {
	h := newHarness(t)
	for _, v := range versions(kmsg.DeleteTopics) {
		h.mustCreate("t", 1)
		resp := h.deleteTopics(deleteReq(v, "t", "nope"))
		require.Len(t, resp.Topics, 2)
		requireCode(t, nil, resp.Topics[0].ErrorCode, "v%d", v)
		require.Equal(t, "t", deref(resp.Topics[0].Topic))
		requireCode(t, kerr.UnknownTopicOrPartition, resp.Topics[1].ErrorCode, "v%d", v)
		require.Nil(t, h.b.image.Topic("t"), "v%d", v)
		if v >= 5 {
			require.Contains(t, deref(resp.Topics[1].ErrorMessage), "does not exist")
		}
	}
}

func TestDeleteTopicsCommitFailure(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	h.env.metaErr = errors.New("nope")
	resp := h.deleteTopics(deleteReq(6, "t"))
	requireCode(t, kerr.RequestTimedOut, resp.Topics[0].ErrorCode)
	require.NotNil(t, h.b.image.Topic("t"))
	require.True(t, h.hosted("t", 0))
}

func cpReq(v int16, validateOnly bool,
	topics ...kmsg.CreatePartitionsRequestTopic) *kmsg.CreatePartitionsRequest {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Version, req.Topics, req.ValidateOnly, req.TimeoutMillis = v, topics, validateOnly, 5000
	return req
}

func cpTopic(name string, count int32, assignment ...[]int32) kmsg.CreatePartitionsRequestTopic {
	t := kmsg.CreatePartitionsRequestTopic{Topic: name, Count: count}
	for _, r := range assignment {
		t.Assignment = append(t.Assignment,
			kmsg.CreatePartitionsRequestTopicAssignment{Replicas: r})
	}
	return t
}

func TestCreatePartitionsGrows(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 2, "retention.ms=77")
	resp := h.createPartitions(cpReq(maxVersion(kmsg.CreatePartitions), false,
		cpTopic("t", 4, []int32{1}, []int32{1})))
	requireCode(t, nil, resp.Topics[0].ErrorCode, deref(resp.Topics[0].ErrorMessage))
	require.EqualValues(t, 4, h.b.image.Topic("t").Partitions)
	for p := int32(0); p < 4; p++ {
		require.True(t, h.hosted("t", p), "partition %d", p)
	}
	require.Len(t, h.topicMeta("t").Partitions, 4)
	require.Equal(t, "77", deref(h.describeTopic("t")["retention.ms"].Value), "configs kept")
}

func TestCreatePartitionsErrors(t *testing.T) {
	tests := []struct {
		name  string
		topic kmsg.CreatePartitionsRequestTopic
		want  *kerr.Error
		msg   string
	}{
		{"unknown", cpTopic("nope", 4), kerr.UnknownTopicOrPartition, "does not exist"},
		{"same", cpTopic("t", 2), kerr.InvalidPartitions, "already has 2"},
		{"shrink", cpTopic("t", 1), kerr.InvalidPartitions, "higher than"},
		{"too many", cpTopic("t", 10_001), kerr.InvalidPartitions, "limit"},
		{"assignment count", cpTopic("t", 4, []int32{1}), kerr.InvalidReplicaAssignment,
			"by 2 but 1"},
		{"other broker", cpTopic("t", 3, []int32{5}), kerr.InvalidReplicaAssignment, "one broker"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.mustCreate("t", 2)
			before := len(h.env.committed)
			resp := h.createPartitions(cpReq(maxVersion(kmsg.CreatePartitions), false, tc.topic))
			requireCode(t, tc.want, resp.Topics[0].ErrorCode)
			require.Contains(t, deref(resp.Topics[0].ErrorMessage), tc.msg)
			require.Len(t, h.env.committed, before)
			require.EqualValues(t, 2, h.b.image.Topic("t").Partitions)
		})
	}
}

func TestCreatePartitionsValidateOnlyAndDuplicates(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	h.mustCreate("u", 1)
	resp := h.createPartitions(cpReq(1, true, cpTopic("t", 3)))
	requireCode(t, nil, resp.Topics[0].ErrorCode)
	require.EqualValues(t, 1, h.b.image.Topic("t").Partitions)

	resp = h.createPartitions(cpReq(1, false, cpTopic("t", 3), cpTopic("u", 2), cpTopic("t", 4)))
	requireCode(t, kerr.InvalidRequest, resp.Topics[0].ErrorCode)
	requireCode(t, nil, resp.Topics[1].ErrorCode)
	requireCode(t, kerr.InvalidRequest, resp.Topics[2].ErrorCode)
	require.EqualValues(t, 1, h.b.image.Topic("t").Partitions)
	require.EqualValues(t, 2, h.b.image.Topic("u").Partitions)
}

func TestCreatePartitionsEveryVersion(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	for _, v := range versions(kmsg.CreatePartitions) {
		n := int32(v) + 2
		resp := h.createPartitions(cpReq(v, false, cpTopic("t", n), cpTopic("x", 9)))
		requireCode(t, nil, resp.Topics[0].ErrorCode, "v%d", v)
		require.Equal(t, "t", resp.Topics[0].Topic)
		requireCode(t, kerr.UnknownTopicOrPartition, resp.Topics[1].ErrorCode, "v%d", v)
		require.Contains(t, deref(resp.Topics[1].ErrorMessage), "does not exist")
		require.EqualValues(t, n, h.b.image.Topic("t").Partitions)
	}
}

func TestRestartKeepsTopicsAndConfigs(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("a", 2, "retention.ms=123")
	h.mustCreate("b", 1)
	h.mustCreate("c", 1)
	h.do(deleteReq(6, "c"))
	h.do(cpReq(3, false, cpTopic("b", 3)))
	id := h.b.image.Topic("a").ID

	h.restart()
	require.Equal(t, []string{"a", "b"}, h.b.image.TopicNames())
	require.Equal(t, id, h.b.image.Topic("a").ID)
	require.Len(t, h.topicMeta("b").Partitions, 3)
	for _, tp := range []core.TopicPartition{{Topic: "a", Partition: 1},
		{Topic: "b", Partition: 2}} {
		require.True(t, h.hosted(tp.Topic, tp.Partition), tp.String())
	}
	cfg := h.describeTopic("a")["retention.ms"]
	require.Equal(t, "123", deref(cfg.Value))
	require.EqualValues(t, kmsg.ConfigSourceDynamicTopicConfig, cfg.Source)
}

func TestCrashLosesOnlyUncommittedCreation(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("a", 1)
	h.holdMeta = true
	id := h.send(cpReq(3, false, cpTopic("a", 2)))
	_, ok := h.reply(id)
	require.False(t, ok)
	h.crash()
	require.EqualValues(t, 1, h.b.image.Topic("a").Partitions)
}
