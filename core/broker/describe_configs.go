package broker

// DescribeConfigs (key 32), versions 0–4.
//
// Resource types:
//   - TOPIC (2): every topic config Sluice knows (TopicConfigDefs), value = the topic's
//     override or else the broker default. Source is DYNAMIC_TOPIC_CONFIG for overrides,
//     STATIC_BROKER_CONFIG when the broker's configured default differs from the built-in
//     one, DEFAULT_CONFIG otherwise; IsDefault (v0) is true for DEFAULT_CONFIG. Unknown
//     topic → UNKNOWN_TOPIC_OR_PARTITION, illegal name → INVALID_TOPIC_EXCEPTION.
//   - BROKER (4), named by this node's id: the broker-level settings (the server.properties
//     name of each topic default, num.partitions, auto.create.topics.enable,
//     default.replication.factor, log.retention.check.interval.ms), all read-only since
//     broker configs are static. The empty name (cluster-wide dynamic defaults) has none.
//     Another node id → INVALID_REQUEST.
//   - anything else → INVALID_REQUEST.
//
// ConfigNames filters (null or empty: all, as some clients send an empty list).
// Synonyms (v1+) are listed, highest precedence first, only when IncludeSynonyms is set;
// documentation (v3+) only with IncludeDocumentation; the config type (v3+) always.
// Nothing is sensitive.

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/meta"
)

func (n *node) handleDescribeConfigs(m *kmsg.DescribeConfigsRequest) kmsg.Response {
	resp := m.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, res := range m.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		entries, code, msg := n.configResource(res.ResourceType, res.ResourceName)
		if code != 0 {
			rr.ErrorCode, rr.ErrorMessage = code, strp(msg)
		} else {
			rr.Configs = describeEntries(entries, res.ConfigNames, m)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// configResource returns the entries of one resource, or an error code and message.
func (n *node) configResource(typ kmsg.ConfigResourceType, name string) ([]configEntry,
	int16, string) {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if p := topicNameProblem(name); p != "" {
			return nil, kerr.InvalidTopicException.Code, p
		}
		t := n.image.Topic(name)
		if t == nil {
			return nil, kerr.UnknownTopicOrPartition.Code,
				fmt.Sprintf("Topic '%s' does not exist.", name)
		}
		return n.topicConfigEntries(t), 0, ""
	case kmsg.ConfigResourceTypeBroker:
		switch name {
		case "":
			return nil, 0, ""
		case n.brokerResourceName():
			return n.brokerConfigEntries(), 0, ""
		}
		return nil, kerr.InvalidRequest.Code, fmt.Sprintf("Unexpected broker id, expected "+
			"%s or empty string, but received %s", n.brokerResourceName(), name)
	}
	return nil, kerr.InvalidRequest.Code,
		fmt.Sprintf("Unsupported config resource type %v", typ)
}

func describeEntries(entries []configEntry, names []string,
	m *kmsg.DescribeConfigsRequest) []kmsg.DescribeConfigsResponseResourceConfig {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := []kmsg.DescribeConfigsResponseResourceConfig{}
	for _, e := range entries {
		if len(names) > 0 && !want[e.name] {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value, c.ReadOnly = e.name, strp(e.value), e.readOnly
		c.Source = e.source
		c.IsDefault = e.source == kmsg.ConfigSourceDefaultConfig
		c.ConfigType = e.typ
		if m.IncludeDocumentation {
			c.Documentation = strp(e.doc)
		}
		c.ConfigSynonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{}
		if m.IncludeSynonyms {
			for _, s := range e.synonyms {
				cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				cs.Name, cs.Value, cs.Source = s.name, strp(s.value), s.source
				c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
			}
		}
		out = append(out, c)
	}
	return out
}

// configEntry is one config as DescribeConfigs and CreateTopics (v5+) report it.
type configEntry struct {
	name, value string
	source      kmsg.ConfigSource
	readOnly    bool
	typ         kmsg.ConfigType
	doc         string
	synonyms    []configSynonym // highest precedence first, the entry's own source first
}

type configSynonym struct {
	name, value string
	source      kmsg.ConfigSource
}

// topicConfigEntries resolves every topic config of t, in name order.
func (n *node) topicConfigEntries(t *meta.Topic) []configEntry {
	out := make([]configEntry, 0, len(TopicConfigDefs))
	for _, d := range TopicConfigDefs {
		e := configEntry{name: d.Name, typ: configType(d.Name), doc: d.Doc}
		if v, ok := t.Override(d.Name); ok {
			e.synonyms = append(e.synonyms,
				configSynonym{d.Name, v, kmsg.ConfigSourceDynamicTopicConfig})
		}
		e.synonyms = append(e.synonyms, n.brokerSynonyms(d.BrokerName,
			n.cfg.TopicDefaults[d.Name], d.Default)...)
		e.value, e.source = e.synonyms[0].value, e.synonyms[0].source
		out = append(out, e)
	}
	return out
}

// brokerSynonyms lists a broker-level setting's value as configured (when it differs
// from the built-in default) and its built-in default.
func (n *node) brokerSynonyms(name, value, builtin string) []configSynonym {
	var out []configSynonym
	if value != builtin {
		out = append(out, configSynonym{name, value, kmsg.ConfigSourceStaticBrokerConfig})
	}
	return append(out, configSynonym{name, builtin, kmsg.ConfigSourceDefaultConfig})
}

// brokerConfigEntries lists the node's settings, in name order.
func (n *node) brokerConfigEntries() []configEntry {
	def := DefaultConfig()
	type setting struct{ name, value, builtin, typ, doc string }
	settings := []setting{
		{"auto.create.topics.enable", strconv.FormatBool(n.cfg.AutoCreateTopics),
			strconv.FormatBool(def.AutoCreateTopics), "auto.create.topics.enable",
			"create unknown topics named in Metadata requests"},
		{"default.replication.factor", strconv.Itoa(int(n.cfg.DefaultReplicationFactor)),
			strconv.Itoa(int(def.DefaultReplicationFactor)), "default.replication.factor",
			"replication factor of topics created with -1 or automatically"},
		{"log.retention.check.interval.ms", strconv.FormatInt(n.cfg.RetentionCheckIntervalMs,
			10), strconv.FormatInt(def.RetentionCheckIntervalMs, 10),
			"log.retention.check.interval.ms", "how often retention runs"},
		{"num.partitions", strconv.Itoa(int(n.cfg.NumPartitions)),
			strconv.Itoa(int(def.NumPartitions)), "num.partitions",
			"partition count of topics created with -1 or automatically"},
	}
	for _, d := range TopicConfigDefs {
		settings = append(settings, setting{d.BrokerName, n.cfg.TopicDefaults[d.Name],
			d.Default, d.Name, "default of the topic config " + d.Name + ": " + d.Doc})
	}
	sort.Slice(settings, func(i, j int) bool { return settings[i].name < settings[j].name })
	out := make([]configEntry, 0, len(settings))
	for _, s := range settings {
		e := configEntry{name: s.name, readOnly: true, typ: configType(s.typ), doc: s.doc,
			synonyms: n.brokerSynonyms(s.name, s.value, s.builtin)}
		e.value, e.source = e.synonyms[0].value, e.synonyms[0].source
		out = append(out, e)
	}
	return out
}
