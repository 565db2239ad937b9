package sim

import (
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/linearizability"
)

// retentionNames maps the names a run's settings may carry to the topic setting the
// checker models (linearizability/retention.go).
var retentionNames = map[string]string{
	"retention.ms": "retention.ms", "log.retention.ms": "retention.ms",
	"retention.bytes": "retention.bytes", "log.retention.bytes": "retention.bytes",
}

// recordRetention hands the checker every retention setting a topic may have had from
// the start: the broker's defaults (every topic, including auto-created and re-created
// ones) and each topic's own configs. Changes made mid-run are recorded when sent
// (admin.alterConfig).
func (w *World) recordRetention() {
	w.hist.ClockSkewNs = w.cfg.Faults.ClockSkewMs * ms
	w.hist.Retention = append(w.hist.Retention,
		linearizability.RetentionSetting{Name: "retention.ms", Value: 604_800_000},
		linearizability.RetentionSetting{Name: "retention.bytes", Value: -1})
	add := func(topic string, configs map[string]string) {
		names := make([]string, 0, len(configs))
		for k := range configs {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			name, ok := retentionNames[k]
			if !ok {
				continue
			}
			if v, err := strconv.ParseInt(configs[k], 10, 64); err == nil {
				w.hist.Retention = append(w.hist.Retention, linearizability.RetentionSetting{
					Topic: topic, Name: name, Value: v})
			}
		}
	}
	add("", w.cfg.Broker)
	for _, t := range w.cfg.Topics {
		add(t.Name, t.Configs)
		w.hist.FlushNever = w.hist.FlushNever || t.Configs["log.flush.policy"] == "never"
	}
	w.hist.FlushNever = w.hist.FlushNever || w.cfg.Broker["log.flush.policy"] == "never"
}

// timeLookup records a ListOffsets-by-timestamp answer to the lookup of target in tp,
// sent at call, for the exact check (linearizability/timelookups.go).
func (w *World) timeLookup(call int64, tp core.TopicPartition, target int64, topic string,
	p *kmsg.ListOffsetsResponseTopicPartition) {
	if target < 0 || p.ErrorCode != 0 || topic != tp.Topic || p.Partition != tp.Partition {
		return
	}
	w.hist.TimeLookups = append(w.hist.TimeLookups, linearizability.TimeLookup{TP: tp,
		Call: call, Return: w.now, Target: target, Offset: p.Offset, Timestamp: p.Timestamp})
}

// retentionSent records a retention setting an admin request is about to set.
func (w *World) retentionSent(topic, name, value string) {
	name, ok := retentionNames[name]
	if !ok {
		return
	}
	if v, err := strconv.ParseInt(value, 10, 64); err == nil {
		w.hist.Retention = append(w.hist.Retention, linearizability.RetentionSetting{
			Topic: topic, At: w.now, Name: name, Value: v})
	}
}
