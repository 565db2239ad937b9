package broker

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
)

// sluice.max.partitions bounds the partitions a node hosts: CreateTopics,
// CreatePartitions and auto-creation beyond it are refused with POLICY_VIOLATION and a
// message naming the setting, counting what the same request planned; deleting a topic
// frees its partitions.
func TestMaxPartitionsRefusesCreatesBeyondTheBound(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxPartitions = 10 })
	h.mustCreate("a", 4)
	resp := h.createTopics(ctTopic("b", 4, -1), ctTopic("c", 4, -1))
	requireCode(t, nil, resp.Topics[0].ErrorCode)
	requireCode(t, kerr.PolicyViolation, resp.Topics[1].ErrorCode)
	require.Contains(t, deref(resp.Topics[1].ErrorMessage), "sluice.max.partitions=10")
	require.False(t, h.hosted("c", 0))

	req := kmsg.NewPtrCreatePartitionsRequest()
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = "a", 7
	req.Topics = append(req.Topics, rt)
	cp := h.createPartitions(req)
	requireCode(t, kerr.PolicyViolation, cp.Topics[0].ErrorCode)
	require.Contains(t, deref(cp.Topics[0].ErrorMessage), "sluice.max.partitions")
	req.Topics[0].Count = 6
	requireCode(t, nil, h.createPartitions(req).Topics[0].ErrorCode)

	h.cfg.NumPartitions = 3
	h.b.cfg.NumPartitions = 3
	md := h.metadataAt(maxVersion(kmsg.Metadata), true, "auto")
	requireCode(t, kerr.PolicyViolation, md.Topics[0].ErrorCode)

	dr := kmsg.NewPtrDeleteTopicsRequest()
	dr.TopicNames = []string{"b"}
	h.deleteTopics(dr)
	h.settle()
	requireCode(t, nil, h.createTopics(ctTopic("c", 4, -1)).Topics[0].ErrorCode)
	require.True(t, h.hosted("c", 3))

	// The count survives a restart: it is rebuilt from the committed records.
	h.restart()
	requireCode(t, kerr.PolicyViolation, h.createTopics(ctTopic("d", 1, -1)).Topics[0].ErrorCode)
}

// A committed partition whose log does not open (descriptors exhausted) makes its
// create fail with the cause, never succeed with the partition offline.
func TestCreateWhoseLogsDoNotOpenIsNotASuccess(t *testing.T) {
	h := newHarness(t)
	h.env.openErr = func(tp core.TopicPartition) error {
		if tp.Topic == "full" && tp.Partition == 2 {
			return errors.New("open logs/full-2: too many open files")
		}
		return nil
	}
	resp := h.createTopics(ctTopic("full", 3, -1), ctTopic("fine", 3, -1))
	requireCode(t, kerr.KafkaStorageError, resp.Topics[0].ErrorCode)
	require.Contains(t, deref(resp.Topics[0].ErrorMessage), "1 of its partitions")
	require.Contains(t, deref(resp.Topics[0].ErrorMessage), "too many open files")
	requireCode(t, nil, resp.Topics[1].ErrorCode)

	req := kmsg.NewPtrCreatePartitionsRequest()
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = "fine", 4
	req.Topics = append(req.Topics, rt)
	h.env.openErr = func(core.TopicPartition) error { return errors.New("open: too many open files in system") }
	requireCode(t, kerr.KafkaStorageError, h.createPartitions(req).Topics[0].ErrorCode)
}
