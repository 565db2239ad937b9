package broker

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
)

func describeReq(v int16, synonyms, docs bool,
	resources ...kmsg.DescribeConfigsRequestResource) *kmsg.DescribeConfigsRequest {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version, req.Resources = v, resources
	req.IncludeSynonyms, req.IncludeDocumentation = synonyms, docs
	return req
}

func dcRes(typ kmsg.ConfigResourceType, name string,
	names ...string) kmsg.DescribeConfigsRequestResource {
	return kmsg.DescribeConfigsRequestResource{ResourceType: typ, ResourceName: name,
		ConfigNames: names}
}

func byName(cs []kmsg.DescribeConfigsResponseResourceConfig,
) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range cs {
		out[c.Name] = c
	}
	return out
}

func TestDescribeConfigsTopicSources(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		require.NoError(t, c.Set("log.retention.ms", "1000")) // a static broker default
	})
	h.mustCreate("t", 1, "segment.bytes=1048576")
	resp := h.describeConfigs(describeReq(4, true, true, dcRes(kmsg.ConfigResourceTypeTopic, "t")))
	require.Len(t, resp.Resources, 1)
	res := resp.Resources[0]
	requireCode(t, nil, res.ErrorCode)
	require.Len(t, res.Configs, len(TopicConfigDefs))
	cs := byName(res.Configs)

	seg := cs["segment.bytes"]
	require.Equal(t, "1048576", deref(seg.Value))
	require.EqualValues(t, kmsg.ConfigSourceDynamicTopicConfig, seg.Source)
	require.False(t, seg.ReadOnly)
	require.EqualValues(t, kmsg.ConfigTypeInt, seg.ConfigType)
	require.Equal(t, []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{
		{Name: "segment.bytes", Value: kmsg.StringPtr("1048576"),
			Source: kmsg.ConfigSourceDynamicTopicConfig},
		{Name: "log.segment.bytes", Value: kmsg.StringPtr("1073741824"),
			Source: kmsg.ConfigSourceDefaultConfig},
	}, seg.ConfigSynonyms)

	ret := cs["retention.ms"]
	require.Equal(t, "1000", deref(ret.Value))
	require.EqualValues(t, kmsg.ConfigSourceStaticBrokerConfig, ret.Source)
	require.Len(t, ret.ConfigSynonyms, 2)
	require.Equal(t, "log.retention.ms", ret.ConfigSynonyms[0].Name)

	pol := cs["cleanup.policy"]
	require.Equal(t, "delete", deref(pol.Value))
	require.EqualValues(t, kmsg.ConfigSourceDefaultConfig, pol.Source)
	require.EqualValues(t, kmsg.ConfigTypeList, pol.ConfigType)
	require.NotEmpty(t, deref(pol.Documentation))

	// Without IncludeSynonyms/IncludeDocumentation those stay empty.
	resp = h.describeConfigs(describeReq(4, false, false, dcRes(kmsg.ConfigResourceTypeTopic, "t")))
	c := byName(resp.Resources[0].Configs)["segment.bytes"]
	require.Empty(t, c.ConfigSynonyms)
	require.Nil(t, c.Documentation)
}

func TestDescribeConfigsFiltersAndErrors(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	resp := h.describeConfigs(describeReq(4, false, false,
		dcRes(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", "no.such"),
		dcRes(kmsg.ConfigResourceTypeTopic, "missing"),
		dcRes(kmsg.ConfigResourceTypeTopic, "bad name"),
		dcRes(kmsg.ConfigResourceTypeBroker, "2"),
		dcRes(kmsg.ConfigResourceTypeBroker, ""),
		dcRes(kmsg.ConfigResourceTypeBrokerLogger, "1"),
	))
	require.Len(t, resp.Resources, 6)
	r := resp.Resources
	requireCode(t, nil, r[0].ErrorCode)
	require.Len(t, r[0].Configs, 1)
	require.Equal(t, "retention.ms", r[0].Configs[0].Name)
	requireCode(t, kerr.UnknownTopicOrPartition, r[1].ErrorCode)
	require.Equal(t, "missing", r[1].ResourceName)
	requireCode(t, kerr.InvalidTopicException, r[2].ErrorCode)
	requireCode(t, kerr.InvalidRequest, r[3].ErrorCode)
	require.Contains(t, deref(r[3].ErrorMessage), "Unexpected broker id")
	requireCode(t, nil, r[4].ErrorCode)
	require.Empty(t, r[4].Configs, "no dynamic cluster-wide defaults")
	requireCode(t, kerr.InvalidRequest, r[5].ErrorCode)

	// An empty name list asks for everything, as a null one does.
	resp = h.describeConfigs(describeReq(4, false, false,
		dcRes(kmsg.ConfigResourceTypeTopic, "t", []string{}...)))
	require.Len(t, resp.Resources[0].Configs, len(TopicConfigDefs))
}

func TestDescribeConfigsBroker(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.NodeID = 3
		c.NumPartitions = 6
	})
	resp := h.describeConfigs(describeReq(4, true, false,
		dcRes(kmsg.ConfigResourceTypeBroker, "3")))
	res := resp.Resources[0]
	requireCode(t, nil, res.ErrorCode)
	cs := byName(res.Configs)
	for _, d := range TopicConfigDefs {
		c, ok := cs[d.BrokerName]
		require.True(t, ok, d.BrokerName)
		require.Equal(t, d.Default, deref(c.Value))
		require.True(t, c.ReadOnly)
		require.EqualValues(t, kmsg.ConfigSourceDefaultConfig, c.Source)
	}
	np := cs["num.partitions"]
	require.Equal(t, "6", deref(np.Value))
	require.EqualValues(t, kmsg.ConfigSourceStaticBrokerConfig, np.Source)
	require.Len(t, np.ConfigSynonyms, 2)
	require.Equal(t, "true", deref(cs["auto.create.topics.enable"].Value))
	require.Equal(t, "1", deref(cs["default.replication.factor"].Value))
	for i := 1; i < len(res.Configs); i++ {
		require.Less(t, res.Configs[i-1].Name, res.Configs[i].Name, "sorted")
	}
}

func TestDescribeConfigsEveryVersion(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1, "retention.ms=9")
	for _, v := range versions(kmsg.DescribeConfigs) {
		resp := h.describeConfigs(describeReq(v, true, true,
			dcRes(kmsg.ConfigResourceTypeTopic, "t"),
			dcRes(kmsg.ConfigResourceTypeTopic, "x")))
		require.Len(t, resp.Resources, 2)
		requireCode(t, kerr.UnknownTopicOrPartition, resp.Resources[1].ErrorCode, "v%d", v)
		cs := byName(resp.Resources[0].Configs)
		ret, seg := cs["retention.ms"], cs["segment.ms"]
		require.Equal(t, "9", deref(ret.Value), "v%d", v)
		if v == 0 {
			require.False(t, ret.IsDefault)
			require.True(t, seg.IsDefault)
		} else {
			require.EqualValues(t, kmsg.ConfigSourceDynamicTopicConfig, ret.Source, "v%d", v)
			require.EqualValues(t, kmsg.ConfigSourceDefaultConfig, seg.Source, "v%d", v)
			require.Len(t, ret.ConfigSynonyms, 2, "v%d", v)
		}
		if v >= 3 {
			require.EqualValues(t, kmsg.ConfigTypeLong, ret.ConfigType, "v%d", v)
			require.NotNil(t, ret.Documentation, "v%d", v)
		}
	}
}

func alterReq(v int16, validateOnly bool,
	resources ...kmsg.AlterConfigsRequestResource) *kmsg.AlterConfigsRequest {
	req := kmsg.NewPtrAlterConfigsRequest()
	req.Version, req.Resources, req.ValidateOnly = v, resources, validateOnly
	return req
}

// acRes is an AlterConfigs resource; kv are name, value pairs.
func acRes(typ kmsg.ConfigResourceType, name string,
	kv ...string) kmsg.AlterConfigsRequestResource {
	r := kmsg.AlterConfigsRequestResource{ResourceType: typ, ResourceName: name}
	for i := 0; i+1 < len(kv); i += 2 {
		r.Configs = append(r.Configs, kmsg.AlterConfigsRequestResourceConfig{Name: kv[i],
			Value: kmsg.StringPtr(kv[i+1])})
	}
	return r
}

func TestAlterConfigsReplacesOverrides(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 2, "retention.ms=100", "segment.bytes=2000")
	resp := h.alterConfigs(alterReq(2, false, acRes(kmsg.ConfigResourceTypeTopic, "t",
		"retention.bytes", "5000", "retention.ms", "200")))
	require.Len(t, resp.Resources, 1)
	requireCode(t, nil, resp.Resources[0].ErrorCode, deref(resp.Resources[0].ErrorMessage))
	require.Equal(t, "t", resp.Resources[0].ResourceName)

	cs := h.describeTopic("t")
	require.Equal(t, "200", deref(cs["retention.ms"].Value))
	require.Equal(t, "5000", deref(cs["retention.bytes"].Value))
	require.EqualValues(t, kmsg.ConfigSourceDynamicTopicConfig, cs["retention.bytes"].Source)
	// segment.bytes was not listed: back to the default.
	require.Equal(t, "1073741824", deref(cs["segment.bytes"].Value))
	require.EqualValues(t, kmsg.ConfigSourceDefaultConfig, cs["segment.bytes"].Source)
	// The replicas were reconfigured.
	require.EqualValues(t, 200, h.b.replicaConfig(h.b.image.Topic("t")).RetentionMs)
	log := h.env.logs[core.TopicPartition{Topic: "t", Partition: 1}]
	require.EqualValues(t, 1073741824, log.Config().SegmentBytes)
}

func TestAlterConfigsErrors(t *testing.T) {
	tests := []struct {
		name string
		res  kmsg.AlterConfigsRequestResource
		want *kerr.Error
		msg  string
	}{
		{"unknown config", acRes(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", "1",
			"nope", "1"), kerr.InvalidConfig, "nope"},
		{"invalid value", acRes(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", "-5"),
			kerr.InvalidConfig, "retention.ms"},
		{"null value", kmsg.AlterConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeTopic,
			ResourceName: "t", Configs: []kmsg.AlterConfigsRequestResourceConfig{
				{Name: "retention.ms"}}}, kerr.InvalidConfig, "Null"},
		{"duplicate key", acRes(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", "1",
			"retention.ms", "2"), kerr.InvalidRequest, "duplicate"},
		{"unknown topic", acRes(kmsg.ConfigResourceTypeTopic, "u", "retention.ms", "1"),
			kerr.UnknownTopicOrPartition, "does not exist"},
		{"broker", acRes(kmsg.ConfigResourceTypeBroker, "1", "num.partitions", "1"),
			kerr.InvalidRequest, "static"},
		{"logger", acRes(kmsg.ConfigResourceTypeBrokerLogger, "1"), kerr.InvalidRequest, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.mustCreate("t", 1, "retention.ms=100")
			before := len(h.env.committed)
			resp := h.alterConfigs(alterReq(2, false, tc.res))
			requireCode(t, tc.want, resp.Resources[0].ErrorCode)
			require.Contains(t, deref(resp.Resources[0].ErrorMessage), tc.msg)
			require.Len(t, h.env.committed, before)
			require.Equal(t, "100", deref(h.describeTopic("t")["retention.ms"].Value))
		})
	}
}

func TestAlterConfigsValidateOnlyDuplicatesAndCommitFailure(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	h.mustCreate("u", 1)
	resp := h.alterConfigs(alterReq(1, true, acRes(kmsg.ConfigResourceTypeTopic, "t",
		"retention.ms", "5")))
	requireCode(t, nil, resp.Resources[0].ErrorCode)
	require.EqualValues(t, kmsg.ConfigSourceDefaultConfig,
		h.describeTopic("t")["retention.ms"].Source)

	resp = h.alterConfigs(alterReq(1, false,
		acRes(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", "5"),
		acRes(kmsg.ConfigResourceTypeTopic, "u", "retention.ms", "6"),
		acRes(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", "7")))
	requireCode(t, kerr.InvalidRequest, resp.Resources[0].ErrorCode)
	requireCode(t, nil, resp.Resources[1].ErrorCode)
	requireCode(t, kerr.InvalidRequest, resp.Resources[2].ErrorCode)
	require.Equal(t, "6", deref(h.describeTopic("u")["retention.ms"].Value))

	h.env.metaErr = errors.New("broken")
	resp = h.alterConfigs(alterReq(1, false, acRes(kmsg.ConfigResourceTypeTopic, "t",
		"retention.ms", "8")))
	requireCode(t, kerr.RequestTimedOut, resp.Resources[0].ErrorCode)
	h.env.metaErr = nil
	require.EqualValues(t, kmsg.ConfigSourceDefaultConfig,
		h.describeTopic("t")["retention.ms"].Source)

	// No change: nothing proposed.
	before := len(h.env.committed)
	h.do(alterReq(1, false, acRes(kmsg.ConfigResourceTypeTopic, "u", "retention.ms", "6")))
	require.Len(t, h.env.committed, before)
}

func TestAlterConfigsEveryVersion(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	for _, v := range versions(kmsg.AlterConfigs) {
		val := string(rune('1' + v))
		resp := h.alterConfigs(alterReq(v, false,
			acRes(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", val),
			acRes(kmsg.ConfigResourceTypeTopic, "x", "retention.ms", val)))
		require.Len(t, resp.Resources, 2)
		requireCode(t, nil, resp.Resources[0].ErrorCode, "v%d", v)
		require.EqualValues(t, kmsg.ConfigResourceTypeTopic, resp.Resources[0].ResourceType)
		requireCode(t, kerr.UnknownTopicOrPartition, resp.Resources[1].ErrorCode, "v%d", v)
		require.Equal(t, "x", resp.Resources[1].ResourceName)
		require.Equal(t, val, deref(h.describeTopic("t")["retention.ms"].Value), "v%d", v)
	}
}

func incReq(v int16, validateOnly bool,
	resources ...kmsg.IncrementalAlterConfigsRequestResource) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Version, req.Resources, req.ValidateOnly = v, resources, validateOnly
	return req
}

type incOp struct {
	name  string
	op    kmsg.IncrementalAlterConfigOp
	value *string
}

func incRes(name string, ops ...incOp) kmsg.IncrementalAlterConfigsRequestResource {
	r := kmsg.IncrementalAlterConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeTopic,
		ResourceName: name}
	for _, o := range ops {
		r.Configs = append(r.Configs, kmsg.IncrementalAlterConfigsRequestResourceConfig{
			Name: o.name, Op: o.op, Value: o.value})
	}
	return r
}

func set(name, value string) incOp {
	return incOp{name, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(value)}
}

func TestIncrementalAlterConfigs(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1, "retention.ms=100", "segment.bytes=2000")
	resp := h.incAlter(incReq(1, false, incRes("t", set("retention.bytes", "77"),
		incOp{"segment.bytes", kmsg.IncrementalAlterConfigOpDelete, nil})))
	requireCode(t, nil, resp.Resources[0].ErrorCode, deref(resp.Resources[0].ErrorMessage))
	cs := h.describeTopic("t")
	require.Equal(t, "100", deref(cs["retention.ms"].Value), "untouched override stays")
	require.Equal(t, "77", deref(cs["retention.bytes"].Value))
	require.EqualValues(t, kmsg.ConfigSourceDynamicTopicConfig, cs["retention.bytes"].Source)
	require.EqualValues(t, kmsg.ConfigSourceDefaultConfig, cs["segment.bytes"].Source)

	// APPEND/SUBTRACT on the list config cleanup.policy.
	resp = h.incAlter(incReq(1, false, incRes("t", incOp{"cleanup.policy",
		kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("delete")})))
	requireCode(t, nil, resp.Resources[0].ErrorCode, deref(resp.Resources[0].ErrorMessage))
	require.Equal(t, "delete", deref(h.describeTopic("t")["cleanup.policy"].Value))
	resp = h.incAlter(incReq(1, false, incRes("t", incOp{"cleanup.policy",
		kmsg.IncrementalAlterConfigOpSubtract, kmsg.StringPtr("delete")})))
	requireCode(t, kerr.InvalidConfig, resp.Resources[0].ErrorCode, "an empty policy is invalid")
}

func TestIncrementalAlterConfigsErrors(t *testing.T) {
	tests := []struct {
		name string
		res  kmsg.IncrementalAlterConfigsRequestResource
		want *kerr.Error
	}{
		{"unknown config", incRes("t", set("nope", "1")), kerr.InvalidConfig},
		{"delete unknown config", incRes("t", incOp{"nope", kmsg.IncrementalAlterConfigOpDelete,
			nil}), kerr.InvalidConfig},
		{"invalid value", incRes("t", set("retention.ms", "x")), kerr.InvalidConfig},
		{"one bad of two", incRes("t", set("retention.ms", "5"), set("segment.ms", "0")),
			kerr.InvalidConfig},
		{"null set", incRes("t", incOp{"retention.ms", kmsg.IncrementalAlterConfigOpSet, nil}),
			kerr.InvalidRequest},
		{"append non-list", incRes("t", incOp{"retention.ms",
			kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("1")}), kerr.InvalidRequest},
		{"subtract non-list", incRes("t", incOp{"retention.ms",
			kmsg.IncrementalAlterConfigOpSubtract, kmsg.StringPtr("1")}), kerr.InvalidRequest},
		{"bad op", incRes("t", incOp{"retention.ms", 9, kmsg.StringPtr("1")}), kerr.InvalidRequest},
		{"duplicate key", incRes("t", set("retention.ms", "1"), set("retention.ms", "2")),
			kerr.InvalidRequest},
		{"unknown topic", incRes("u", set("retention.ms", "1")), kerr.UnknownTopicOrPartition},
		{"broker", kmsg.IncrementalAlterConfigsRequestResource{
			ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1"}, kerr.InvalidRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.mustCreate("t", 1, "retention.ms=100")
			before := len(h.env.committed)
			resp := h.incAlter(incReq(1, false, tc.res))
			requireCode(t, tc.want, resp.Resources[0].ErrorCode)
			require.NotEmpty(t, deref(resp.Resources[0].ErrorMessage))
			require.Len(t, h.env.committed, before)
			require.Equal(t, "100", deref(h.describeTopic("t")["retention.ms"].Value))
		})
	}
}

func TestIncrementalAlterConfigsConcurrent(t *testing.T) {
	// Two incremental changes sent before either commits must both take effect.
	h := newHarness(t)
	h.mustCreate("t", 1)
	a := h.send(incReq(1, false, incRes("t", set("retention.ms", "5"))))
	b := h.send(incReq(1, false, incRes("t", set("retention.bytes", "6"))))
	h.settle()
	for _, id := range []uint64{a, b} {
		resp, ok := h.reply(id)
		require.True(t, ok)
		requireCode(t, nil, resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode)
	}
	cs := h.describeTopic("t")
	require.Equal(t, "5", deref(cs["retention.ms"].Value))
	require.Equal(t, "6", deref(cs["retention.bytes"].Value))
}

func TestIncrementalAlterConfigsEveryVersion(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	for _, v := range versions(kmsg.IncrementalAlterConfigs) {
		val := string(rune('1' + v))
		resp := h.incAlter(incReq(v, false, incRes("t", set("segment.ms", val)),
			incRes("x", set("segment.ms", val))))
		require.Len(t, resp.Resources, 2)
		requireCode(t, nil, resp.Resources[0].ErrorCode, "v%d", v)
		requireCode(t, kerr.UnknownTopicOrPartition, resp.Resources[1].ErrorCode, "v%d", v)
		require.Equal(t, val, deref(h.describeTopic("t")["segment.ms"].Value))
		// ValidateOnly checks without changing.
		resp = h.incAlter(incReq(v, true, incRes("t", set("segment.ms", "999"))))
		requireCode(t, nil, resp.Resources[0].ErrorCode, "v%d", v)
		require.Equal(t, val, deref(h.describeTopic("t")["segment.ms"].Value))
	}
}

func TestRestartKeepsAlteredConfigs(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	h.do(incReq(1, false, incRes("t", set("retention.ms", "4242"))))
	h.restart()
	c := h.describeTopic("t")["retention.ms"]
	require.Equal(t, "4242", deref(c.Value))
	require.EqualValues(t, kmsg.ConfigSourceDynamicTopicConfig, c.Source)
	require.EqualValues(t, 4242, h.b.replicaConfig(h.b.image.Topic("t")).RetentionMs)
}

func TestDescribeCluster(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.NodeID, c.AdvertisedHost, c.AdvertisedPort, c.ClusterID = 4, "h", 1234, "cid"
	})
	for _, v := range versions(kmsg.DescribeCluster) {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version = v
		resp := h.do(req).(*kmsg.DescribeClusterResponse)
		requireCode(t, nil, resp.ErrorCode, "v%d", v)
		require.Equal(t, "cid", resp.ClusterID)
		require.EqualValues(t, 4, resp.ControllerID)
		require.Equal(t, []kmsg.DescribeClusterResponseBroker{{NodeID: 4, Host: "h", Port: 1234}},
			resp.Brokers)
		require.EqualValues(t, -2147483648, resp.ClusterAuthorizedOperations)
	}
	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version, req.EndpointType = 1, 2
	resp := h.do(req).(*kmsg.DescribeClusterResponse)
	requireCode(t, kerr.UnsupportedEndpointType, resp.ErrorCode)
}
