package broker

// armRetention schedules the next retention pass (log.retention.check.interval.ms).
func (rm *replicaManager) armRetention() {
	rm.setTimer(rm.now.AddMillis(rm.cfg.RetentionCheckIntervalMs), brokerTimer{kind: timerRetention})
}

// retentionPass lets every replica delete its expired or excess segments, in
// partition order, then re-arms itself.
func (rm *replicaManager) retentionPass() {
	nowMs := rm.now.Millis()
	for _, tp := range rm.sortedPartitions() {
		if rm.replicas[tp].EnforceRetention(nowMs) > 0 {
			rm.hit(pRetentionPassDeleted)
		}
	}
	rm.armRetention()
	rm.armCleaner() // a topic altered to compact since the last pass
}

// Shutdown prepares for a clean stop: every replica syncs its log and saves its
// producer state so the next start need not rescan the log. The driver calls it on
// the broker's thread after it stopped feeding requests; it blocks on fsyncs, which is
// fine only because nothing else is waiting any more.
func (rm *replicaManager) Shutdown() {
	for _, tp := range rm.sortedPartitions() {
		rm.replicas[tp].Shutdown()
	}
}
