package broker

import "github.com/sluicemq/sluice/core/probe"

// Code probes of the broker (package probe): the branches a simulator sweep should
// reach. Error answers are also counted per API by the simulator's (API, error code)
// pairs, so these mark what a code does not show: waits, wake-ups, recoveries.
// docs/simulation.md lists those a sweep never reaches, with the reason.
var (
	pProduceAcks0           = probe.Register("broker/produce-acks-0")
	pProduceParked          = probe.Register("broker/produce-waits-for-hwm")
	pProduceTimedOut        = probe.Register("broker/produce-wait-timed-out")
	pProduceShed            = probe.Register("broker/produce-shed-too-many-waiting")
	pProduceFailedWaiting   = probe.Register("broker/produce-failed-while-waiting")
	pProduceLogNotOpen      = probe.Register("broker/produce-log-not-open")
	pSyncStale              = probe.Register("broker/sync-done-for-gone-replica")
	pFetchParked            = probe.Register("broker/fetch-parked")
	pFetchWoken             = probe.Register("broker/fetch-woken-by-data")
	pFetchExpired           = probe.Register("broker/fetch-wait-expired")
	pFetchConnClosed        = probe.Register("broker/fetch-dropped-conn-closed")
	pFetchDrained           = probe.Register("broker/fetch-answered-at-drain")
	pFetchPartitionGone     = probe.Register("broker/fetch-partition-gone-while-parked")
	pFetchOverLimit         = probe.Register("broker/fetch-partition-over-limit-skipped")
	pEpochMatched           = probe.Register("broker/offset-for-leader-epoch-matched")
	pListByTime             = probe.Register("broker/list-offsets-by-timestamp")
	pListMaxTimestamp       = probe.Register("broker/list-offsets-max-timestamp")
	pMetaFailed             = probe.Register("broker/metadata-change-not-committed")
	pMetaUnknown            = probe.Register("broker/metadata-change-outcome-unknown")
	pMetaNotApplied         = probe.Register("broker/metadata-record-did-not-apply")
	pAutoCreate             = probe.Register("broker/auto-create-topic")
	pAutoCreateDeferred     = probe.Register("broker/auto-create-over-rate")
	pOpenLogFailed          = probe.Register("broker/open-log-failed")
	pRecoverFailed          = probe.Register("broker/recover-partition-failed")
	pReplayDeletion         = probe.Register("broker/replay-topic-deletion")
	pConfigsApplied         = probe.Register("broker/configs-altered-applied")
	pConfigsHWMMoved        = probe.Register("broker/configs-altered-moved-hwm")
	pRetentionPassDeleted   = probe.Register("broker/retention-pass-deleted-segments")
	pOffsetsTopicCreate     = probe.Register("broker/offsets-topic-created")
	pOffsetsLoaded          = probe.Register("broker/offsets-replayed-at-start")
	pOffsetsReplayStopped   = probe.Register("broker/offsets-replay-stopped")
	pOffsetsOrphansPurged   = probe.Register("broker/offsets-orphans-purged")
	pOffsetsTopicDeleted    = probe.Register("broker/offsets-of-deleted-topic-removed")
	pOffsetsCompacted       = probe.Register("broker/offsets-partition-compacted")
	pOffsetsExpired         = probe.Register("broker/offsets-expired")
	pGroupSwept             = probe.Register("broker/empty-group-deleted")
	pOffsetWriteFailed      = probe.Register("broker/offset-write-failed")
	pCoordinatorUnavailable = probe.Register("broker/coordinator-partition-offline")
)

func (b *Broker) hit(id probe.ID) { b.probes.Hit(id) }
