package replica

import "github.com/sluicemq/sluice/core/probe"

// Code probes of the replica (package probe): the branches a simulator sweep should
// reach. docs/simulation.md lists those it never reaches, with the reason.
var (
	pAppendOffline       = probe.Register("replica/append-offline")
	pAppendTooLarge      = probe.Register("replica/append-message-too-large")
	pAppendCorrupt       = probe.Register("replica/append-corrupt-batch")
	pAppendTransactional = probe.Register("replica/append-transactional-refused")
	pAppendWriteFailed   = probe.Register("replica/append-write-failed")
	pAppendLogAppendTime = probe.Register("replica/append-log-append-time")
	pProducerUnknown     = probe.Register("replica/producer-unknown-id")
	pProducerFenced      = probe.Register("replica/producer-old-epoch")
	pProducerNewEpochGap = probe.Register("replica/producer-new-epoch-not-at-zero")
	pProducerDuplicate   = probe.Register("replica/producer-duplicate-batch")
	pProducerOutOfOrder  = probe.Register("replica/producer-out-of-order")
	pProducerEvicted     = probe.Register("replica/producer-evicted")
	pReadOffline         = probe.Register("replica/read-offline")
	pReadOutOfRange      = probe.Register("replica/read-out-of-range")
	pReadAtHighWatermark = probe.Register("replica/read-at-high-watermark")
	pReadFailed          = probe.Register("replica/read-failed")
	pReadFresh           = probe.Register("replica/read-fresh")
	pDeleteRecordsMoved  = probe.Register("replica/delete-records-moved-start")
	pDeleteRecordsRange  = probe.Register("replica/delete-records-out-of-range")
	pDeleteRecordsHWM    = probe.Register("replica/delete-records-to-high-watermark")
	pRetentionTime       = probe.Register("replica/retention-by-time")
	pRetentionBytes      = probe.Register("replica/retention-by-bytes")
	pRetentionHeldByHWM  = probe.Register("replica/retention-held-by-high-watermark")
	pSyncFailed          = probe.Register("replica/fsync-failed")
	pSnapshotSaved       = probe.Register("replica/producer-snapshot-saved")
	pRecoverFromSnapshot = probe.Register("replica/recover-from-snapshot")
	// A producer snapshot taken before the log start moves (coverProducers): of the
	// whole table when all is durable, rebuilt up to the new start otherwise; and a
	// deletion held because it could not be taken.
	pSnapshotBeforeDelete  = probe.Register("replica/producer-snapshot-before-delete")
	pSnapshotRebuilt       = probe.Register("replica/producer-snapshot-rebuilt-before-delete")
	pDeleteHeldForSnapshot = probe.Register("replica/delete-held-for-producer-snapshot")
	pTimestampMissing      = probe.Register("replica/timestamp-lookup-past-end")
	pTimestampFound        = probe.Register("replica/timestamp-lookup-found")
	pEpochsRebuilt         = probe.Register("replica/leader-epochs-rebuilt")
)

func (r *Replica) hit(id probe.ID) { r.cfg.Probes.Hit(id) }
