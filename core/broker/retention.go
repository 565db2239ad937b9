package broker

// armRetention schedules the next retention pass (log.retention.check.interval.ms).
func (b *Broker) armRetention() {
	b.setTimer(b.now.AddMillis(b.cfg.RetentionCheckIntervalMs), brokerTimer{kind: timerRetention})
}

// retentionPass lets every replica delete its expired or excess segments, in
// partition order, then re-arms itself.
func (b *Broker) retentionPass() {
	nowMs := b.now.Millis()
	for _, tp := range b.sortedPartitions() {
		if b.replicas[tp].EnforceRetention(nowMs) > 0 {
			b.hit(pRetentionPassDeleted)
		}
	}
	b.armRetention()
}

// Shutdown prepares for a clean stop: every replica syncs its log and saves its
// producer state so the next start need not rescan the log. The driver calls it on
// the broker's thread after it stopped feeding requests; it blocks on fsyncs, which is
// fine only because nothing else is waiting any more.
func (b *Broker) Shutdown() {
	for _, tp := range b.sortedPartitions() {
		b.replicas[tp].Shutdown()
	}
}
