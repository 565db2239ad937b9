package broker

// Limits on what one request may make the broker do: the size of fetch responses and the
// rate of topic creation. docs/limits.md describes each setting, its default, what a
// client sees when it is hit and how to raise it.

import (
	"fmt"
	"strconv"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
)

// LimitsConfig holds the request-bounding settings.
type LimitsConfig struct {
	// FetchMaxBytes is fetch.max.bytes: the most record bytes one consumer Fetch response
	// carries, whatever the request's MaxBytes (KIP-541).
	FetchMaxBytes int
	// ReplicaFetchResponseMaxBytes is replica.fetch.response.max.bytes: the same bound
	// for fetches from followers (ReplicaID >= 0).
	ReplicaFetchResponseMaxBytes int
	// AutoCreateTopicsPerRequest (sluice.auto.create.topics.max.per.request) bounds the
	// topics one Metadata request may auto-create; the rest are answered
	// LEADER_NOT_AVAILABLE without being created, and a retry creates them.
	AutoCreateTopicsPerRequest int
	// AutoCreatePartitionsPerSec (sluice.auto.create.partitions.per.sec) is the rate at
	// which Metadata auto-creation may create partitions, with a burst of one second's
	// worth. 0 for either setting turns auto-creation off, as
	// auto.create.topics.enable=false does.
	AutoCreatePartitionsPerSec int
	// ControllerMutationRate (sluice.controller.mutation.rate) is the rate, in
	// partitions per second, at which CreateTopics may create partitions (Kafka's
	// controller_mutation_rate quota, KIP-599, as one node-wide bucket). Past it, v6+
	// requests get THROTTLING_QUOTA_EXCEEDED with a throttle time; older versions, which
	// do not know that error, are accepted and told to back off through
	// ThrottleMillis, as Kafka does. 0: unlimited.
	ControllerMutationRate int
	// OpenLogsPerStep (sluice.open.logs.per.step) is the most new partition logs the
	// broker opens in one step; a bigger creation continues in later steps, serving
	// other clients in between (open_queue.go).
	OpenLogsPerStep int
	// FetchSessionCacheSlots is max.incremental.fetch.session.cache.slots: the most
	// incremental fetch sessions (KIP-227) the node keeps; 0 turns sessions off.
	FetchSessionCacheSlots int
	// FetchSessionCacheMaxPartitions (sluice.fetch.session.cache.max.partitions) bounds
	// the partitions all sessions hold together (fetch_session.go).
	FetchSessionCacheMaxPartitions int
}

// DefaultLimitsConfig returns Kafka's defaults where Kafka has the setting.
func DefaultLimitsConfig() LimitsConfig {
	return LimitsConfig{
		FetchMaxBytes:                57_671_680, // 55 MiB
		ReplicaFetchResponseMaxBytes: 10 << 20,
		AutoCreateTopicsPerRequest:   20,
		AutoCreatePartitionsPerSec:   50,
		ControllerMutationRate:       0,
		OpenLogsPerStep:              64,
		FetchSessionCacheSlots:       1000,
		// About 150 bytes each: 15 MB at most.
		FetchSessionCacheMaxPartitions: 100_000,
	}
}

// limitSettings lists every setting LimitsConfig.set accepts, with its lower bound.
var limitSettings = []intSetting[LimitsConfig]{
	{"fetch.max.bytes", 1024, func(c *LimitsConfig) *int { return &c.FetchMaxBytes }},
	{"replica.fetch.response.max.bytes", 0,
		func(c *LimitsConfig) *int { return &c.ReplicaFetchResponseMaxBytes }},
	{"sluice.auto.create.topics.max.per.request", 0,
		func(c *LimitsConfig) *int { return &c.AutoCreateTopicsPerRequest }},
	{"sluice.auto.create.partitions.per.sec", 0,
		func(c *LimitsConfig) *int { return &c.AutoCreatePartitionsPerSec }},
	{"sluice.controller.mutation.rate", 0,
		func(c *LimitsConfig) *int { return &c.ControllerMutationRate }},
	{"sluice.open.logs.per.step", 1, func(c *LimitsConfig) *int { return &c.OpenLogsPerStep }},
	{"max.incremental.fetch.session.cache.slots", 0,
		func(c *LimitsConfig) *int { return &c.FetchSessionCacheSlots }},
	{"sluice.fetch.session.cache.max.partitions", 0,
		func(c *LimitsConfig) *int { return &c.FetchSessionCacheMaxPartitions }},
}

// set applies one setting; ok is false when name is not a limit setting.
func (c *LimitsConfig) set(name, value string) (ok bool, err error) {
	return setIntSetting(limitSettings, c, name, value)
}

func limitSettingNames() []string { return intSettingNames(limitSettings) }

// intSetting is one integer setting of a config struct C, with its lower bound.
type intSetting[C any] struct {
	name string
	min  int64
	dst  func(c *C) *int
}

// setIntSetting applies one setting of table to c; ok is false when name is not in it.
func setIntSetting[C any](table []intSetting[C], c *C, name, value string) (ok bool,
	err error) {
	for _, s := range table {
		if s.name != name {
			continue
		}
		n, err := strconv.ParseInt(value, 10, 32)
		if err != nil {
			return true, fmt.Errorf("%s: not a number: %q", name, value)
		}
		if n < s.min {
			return true, fmt.Errorf("%s: %d is below the minimum %d", name, n, s.min)
		}
		*s.dst(c) = int(n)
		return true, nil
	}
	return false, nil
}

func intSettingNames[C any](table []intSetting[C]) []string {
	out := make([]string, len(table))
	for i, s := range table {
		out[i] = s.name
	}
	return out
}

// tokenBucket meters partitions created per second on the broker's clock. Tokens are
// kept in thousandths of a partition so that refills are exact integers. Like Kafka's
// controller mutation quota, a request is admitted while the bucket is not empty and
// may take it below zero (one topic's partitions at most); the next is admitted once
// the refill brought it back above zero.
type tokenBucket struct {
	milli int64     // tokens × 1000, at most burst × 1000
	last  core.Time // when milli was last brought up to date
	init  bool
}

// refill brings the bucket up to date at now for rate partitions per second, holding at
// most one second's worth.
func (t *tokenBucket) refill(now core.Time, rate int) {
	full := int64(rate) * 1000
	if !t.init {
		t.milli, t.last, t.init = full, now, true
		return
	}
	elapsedMs := int64(now-t.last) / 1e6
	if elapsedMs <= 0 {
		return
	}
	// rate partitions per second is rate thousandths of a partition per millisecond.
	t.milli = min(full, t.milli+elapsedMs*int64(rate))
	t.last = t.last.AddMillis(elapsedMs)
}

// admits says whether the bucket takes a request at now: it is not empty.
func (t *tokenBucket) admits(now core.Time, rate int) bool {
	t.refill(now, rate)
	return t.milli > 0
}

// spend debits n partitions; the bucket may go below zero.
func (t *tokenBucket) spend(n int32) { t.milli -= int64(n) * 1000 }

// waitMs is how long until the bucket admits again (0: now).
func (t *tokenBucket) waitMs(now core.Time, rate int) int64 {
	t.refill(now, rate)
	if t.milli > 0 || rate <= 0 {
		return 0
	}
	return (-t.milli)/int64(rate) + 1
}

// creationState meters topic creation (limits.go).
type creationState struct {
	auto     tokenBucket // Metadata auto-creation
	admin    tokenBucket // CreateTopics (sluice.controller.mutation.rate)
	lastWarn core.Time   // last "auto-creation deferred" log line
	deferred int         // topics deferred since that line
}

// autoCreateAdmits says whether a Metadata request that already planned planned
// topics may auto-create one more now.
func (ctl *adminController) autoCreateAdmits(planned int) bool {
	return planned < ctl.cfg.Limits.AutoCreateTopicsPerRequest &&
		ctl.creation.auto.admits(ctl.now, ctl.cfg.Limits.AutoCreatePartitionsPerSec)
}

// autoCreateDeferred logs, at most once a second, how many topics auto-creation left
// for a later request.
func (ctl *adminController) autoCreateDeferred(n int) {
	ctl.creation.deferred += n
	if ctl.creation.lastWarn != 0 && ctl.now < ctl.creation.lastWarn.AddMillis(1000) {
		return
	}
	ctl.lg.Warn("topic auto-creation bounded: topics answered LEADER_NOT_AVAILABLE, "+
		"created when clients retry",
		zap.Int("deferred_topics", ctl.creation.deferred),
		zap.Int("max_per_request", ctl.cfg.Limits.AutoCreateTopicsPerRequest),
		zap.Int("partitions_per_sec", ctl.cfg.Limits.AutoCreatePartitionsPerSec))
	ctl.creation.lastWarn, ctl.creation.deferred = ctl.now, 0
}
