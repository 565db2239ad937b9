package console

import (
	"context"
	"net/http"

	"github.com/twmb/franz-go/pkg/kadm"
	"go.uber.org/zap"
)

type topicSummary struct {
	Name              string `json:"name"`
	Internal          bool   `json:"internal"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replicationFactor"`
	UnderReplicated   int    `json:"underReplicated"`
	Offline           int    `json:"offline"`
	Records           int64  `json:"records"` // high watermark minus log start, summed
	Error             string `json:"error,omitempty"`
}

func (c *Console) topics(ctx context.Context, _ *http.Request) (any, error) {
	md, err := c.metadata(ctx)
	if err != nil {
		return nil, err
	}
	sorted := md.Topics.Sorted()
	truncated := len(sorted) > MaxTopics
	if truncated {
		sorted = sorted[:MaxTopics]
	}
	names := make([]string, 0, len(sorted))
	for _, td := range sorted {
		names = append(names, td.Topic)
	}
	starts, ends := c.offsets(ctx, names...)
	out := make([]topicSummary, 0, len(sorted))
	for _, td := range sorted {
		s := topicSummary{Name: td.Topic, Internal: td.IsInternal,
			Partitions: len(td.Partitions)}
		if td.Err != nil {
			s.Error = td.Err.Error()
		}
		for _, pd := range td.Partitions {
			s.ReplicationFactor = max(s.ReplicationFactor, len(pd.Replicas))
			if pd.Leader < 0 {
				s.Offline++
			} else if len(pd.ISR) < len(pd.Replicas) {
				s.UnderReplicated++
			}
			st, ok1 := starts.Lookup(td.Topic, pd.Partition)
			en, ok2 := ends.Lookup(td.Topic, pd.Partition)
			if ok1 && ok2 && st.Err == nil && en.Err == nil {
				s.Records += en.Offset - st.Offset
			}
		}
		out = append(out, s)
	}
	return map[string]any{"topics": out, "truncated": truncated}, nil
}

// offsets lists the start and end offsets of topics; a failure leaves them empty (the
// page then shows the offsets as unknown rather than failing as a whole).
func (c *Console) offsets(ctx context.Context, topics ...string) (kadm.ListedOffsets,
	kadm.ListedOffsets) {
	if len(topics) == 0 {
		return kadm.ListedOffsets{}, kadm.ListedOffsets{}
	}
	starts, err := c.adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		c.lg.Debug("console: list start offsets", zap.Error(err))
	}
	ends, err := c.adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		c.lg.Debug("console: list end offsets", zap.Error(err))
	}
	return starts, ends
}

type partitionJSON struct {
	Partition       int32   `json:"partition"`
	Leader          int32   `json:"leader"`
	LeaderEpoch     int32   `json:"leaderEpoch"`
	Replicas        []int32 `json:"replicas"`
	ISR             []int32 `json:"isr"`
	OfflineReplicas []int32 `json:"offlineReplicas"`
	StartOffset     *int64  `json:"startOffset"`
	EndOffset       *int64  `json:"endOffset"` // the high watermark
	SizeBytes       *int64  `json:"sizeBytes"` // on this node, when it hosts the partition
	Error           string  `json:"error,omitempty"`
}

type configJSON struct {
	Name      string  `json:"name"`
	Value     *string `json:"value"`
	Source    string  `json:"source"`
	Sensitive bool    `json:"sensitive"`
}

// topicDetail finds topic in the metadata: 404 when the cluster has no such topic.
func (c *Console) topicDetail(ctx context.Context, r *http.Request) (kadm.TopicDetail,
	error) {
	name, herr := topicParam(r)
	if herr != nil {
		return kadm.TopicDetail{}, herr
	}
	md, err := c.metadata(ctx)
	if err != nil {
		return kadm.TopicDetail{}, err
	}
	td, ok := md.Topics[name]
	if !ok || td.Err != nil {
		return kadm.TopicDetail{}, errf(http.StatusNotFound, "unknown topic %q", name)
	}
	return td, nil
}

func (c *Console) topic(ctx context.Context, r *http.Request) (any, error) {
	td, err := c.topicDetail(ctx, r)
	if err != nil {
		return nil, err
	}
	starts, ends := c.offsets(ctx, td.Topic)
	sizes := c.gather().partitionSizes(td.Topic)
	parts := td.Partitions.Sorted()
	truncated := len(parts) > MaxPartitions
	if truncated {
		parts = parts[:MaxPartitions]
	}
	out := make([]partitionJSON, 0, len(parts))
	for _, pd := range parts {
		p := partitionJSON{Partition: pd.Partition, Leader: pd.Leader,
			LeaderEpoch: pd.LeaderEpoch, Replicas: nonNil(pd.Replicas), ISR: nonNil(pd.ISR),
			OfflineReplicas: nonNil(pd.OfflineReplicas)}
		if pd.Err != nil {
			p.Error = pd.Err.Error()
		}
		if o, ok := starts.Lookup(td.Topic, pd.Partition); ok && o.Err == nil {
			p.StartOffset = &o.Offset
		}
		if o, ok := ends.Lookup(td.Topic, pd.Partition); ok && o.Err == nil {
			p.EndOffset = &o.Offset
		}
		if s, ok := sizes[pd.Partition]; ok {
			p.SizeBytes = &s
		}
		out = append(out, p)
	}
	configs := []configJSON{}
	rcs, err := c.adm.DescribeTopicConfigs(ctx, td.Topic)
	if err == nil {
		if rc, err := rcs.On(td.Topic, nil); err == nil && rc.Err == nil {
			for _, cf := range rc.Configs {
				configs = append(configs, configJSON{Name: cf.Key, Value: cf.Value,
					Source: cf.Source.String(), Sensitive: cf.Sensitive})
			}
		}
	}
	return map[string]any{"name": td.Topic, "internal": td.IsInternal, "partitions": out,
		"truncated": truncated, "configs": configs}, nil
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}
