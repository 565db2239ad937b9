package broker

import (
	"strings"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
)

// Helpers for the admin tests: typed requests at the highest served version.

// ctTopic builds a CreateTopics entry; configs are "name=value" pairs.
func ctTopic(name string, partitions int32, rf int16,
	configs ...string) kmsg.CreateTopicsRequestTopic {
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, rf
	for _, c := range configs {
		k, v, _ := strings.Cut(c, "=")
		tc := kmsg.NewCreateTopicsRequestTopicConfig()
		tc.Name, tc.Value = k, kmsg.StringPtr(v)
		t.Configs = append(t.Configs, tc)
	}
	return t
}

func (h *harness) createTopicsAt(v int16, validateOnly bool,
	topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsResponse {
	h.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.Topics, req.ValidateOnly, req.TimeoutMillis = v, topics, validateOnly, 5000
	resp := h.do(req).(*kmsg.CreateTopicsResponse)
	require.Len(h.t, resp.Topics, len(topics))
	return resp
}

func (h *harness) createTopics(topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsResponse {
	h.t.Helper()
	return h.createTopicsAt(maxVersion(kmsg.CreateTopics), false, topics...)
}

// mustCreate creates one topic and requires success.
func (h *harness) mustCreate(name string, partitions int32, configs ...string) {
	h.t.Helper()
	rt := h.createTopics(ctTopic(name, partitions, -1, configs...)).Topics[0]
	require.Zero(h.t, rt.ErrorCode, "create %s: %s", name, deref(rt.ErrorMessage))
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// metadataAt asks for the named topics (nil: all) at version v.
func (h *harness) metadataAt(v int16, allowAuto bool, names ...string) *kmsg.MetadataResponse {
	h.t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version, req.AllowAutoTopicCreation = v, allowAuto
	if names != nil {
		req.Topics = []kmsg.MetadataRequestTopic{}
	}
	for _, n := range names {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(n)
		req.Topics = append(req.Topics, rt)
	}
	return h.do(req).(*kmsg.MetadataResponse)
}

func (h *harness) metadata(names ...string) *kmsg.MetadataResponse {
	h.t.Helper()
	return h.metadataAt(maxVersion(kmsg.Metadata), false, names...)
}

// topicMeta returns the single topic of a metadata response for name.
func (h *harness) topicMeta(name string) kmsg.MetadataResponseTopic {
	h.t.Helper()
	resp := h.metadata(name)
	require.Len(h.t, resp.Topics, 1)
	return resp.Topics[0]
}

// describeTopic returns the topic's configs as DescribeConfigs reports them, by name.
func (h *harness) describeTopic(name string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	h.t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = maxVersion(kmsg.DescribeConfigs)
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, name
	req.Resources = append(req.Resources, res)
	resp := h.do(req).(*kmsg.DescribeConfigsResponse)
	require.Len(h.t, resp.Resources, 1)
	require.Zero(h.t, resp.Resources[0].ErrorCode, deref(resp.Resources[0].ErrorMessage))
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = c
	}
	return out
}

// hosted reports whether the broker hosts an open replica of tp.
func (h *harness) hosted(topic string, p int32) bool {
	return h.b.replicas[core.TopicPartition{Topic: topic, Partition: p}] != nil
}

// requireCode checks a Kafka error code, printing names rather than numbers.
func requireCode(t require.TestingT, want *kerr.Error, got int16, msgAndArgs ...any) {
	w := int16(0)
	if want != nil {
		w = want.Code
	}
	require.Equal(t, codeName(w), codeName(got), msgAndArgs...)
}

func codeName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(code).Error()
}

// Typed wrappers of do.

func (h *harness) deleteTopics(req *kmsg.DeleteTopicsRequest) *kmsg.DeleteTopicsResponse {
	h.t.Helper()
	return h.do(req).(*kmsg.DeleteTopicsResponse)
}

func (h *harness) createPartitions(
	req *kmsg.CreatePartitionsRequest) *kmsg.CreatePartitionsResponse {
	h.t.Helper()
	return h.do(req).(*kmsg.CreatePartitionsResponse)
}

func (h *harness) describeConfigs(
	req *kmsg.DescribeConfigsRequest) *kmsg.DescribeConfigsResponse {
	h.t.Helper()
	return h.do(req).(*kmsg.DescribeConfigsResponse)
}

func (h *harness) alterConfigs(req *kmsg.AlterConfigsRequest) *kmsg.AlterConfigsResponse {
	h.t.Helper()
	return h.do(req).(*kmsg.AlterConfigsResponse)
}

func (h *harness) incAlter(
	req *kmsg.IncrementalAlterConfigsRequest) *kmsg.IncrementalAlterConfigsResponse {
	h.t.Helper()
	return h.do(req).(*kmsg.IncrementalAlterConfigsResponse)
}
