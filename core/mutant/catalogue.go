package mutant

// Mutant is one planted bug: a plausible one-line slip, guarded in the code by
// `if mutantOn("<bug>")` in Package (the hook's name there is Name without the
// package prefix).
type Mutant struct {
	Name    string // "package/bug": what SLUICE_MUTANT selects
	Package string // the directory holding the hook
	Area    string // durability, offsets, idempotence, retention, indexes, ...
	Bug     string // the slip, in one line
	Unit    string // the unit-test package that should also catch it
}

// Catalogue lists every mutant, in the order `make mutants` runs them.
var Catalogue = []Mutant{
	// Durability.
	{"broker/ack-before-fsync", "core/broker", "durability",
		"acks=all answered once the batch is written, before its fsync", "./core/broker/"},
	{"replica/hwm-on-append", "core/replica", "durability",
		"the high-water mark advances on write even when flush-always waits for the fsync",
		"./core/replica/"},
	{"replica/durable-at-completion", "core/replica", "durability",
		"a completed fsync marks the log end durable, not the end when the fsync began",
		"./core/replica/"},
	{"disk/roll-no-dir-sync", "disk", "durability",
		"a Sync after a roll fsyncs the new segment but not the directory holding its entry",
		"./disk/"},
	{"group/sync-before-durable", "core/group", "groups",
		"SyncGroup answered before the generation's record is durable", "./core/group/"},
	{"broker/commit-ignores-write-error", "core/broker", "groups",
		"an offset commit whose write failed is applied and acknowledged", "./core/broker/"},
	{"broker/commit-before-durable", "core/broker", "groups",
		"offset commits (and group records) are answered once the log end covers their " +
			"batch, not the high-water mark",
		"./core/broker/"},
	{"disk/taint-volatile-skipped", "disk", "durability",
		"a failed fsync's taint goes to the state store only, which a failing disk may refuse",
		"./disk/"},
	{"disk/fsync-flight-unmarked", "disk", "durability",
		"a Sync does not mark its fsyncs in flight, so a process that dies in a failing one " +
			"is not undone at restart",
		"./disk/"},
	{"disk/state-nosync", "disk", "durability",
		"node-state store writes (log start offsets, ...) are committed without sync",
		"./disk/"},
	// Offsets and fetch.
	{"replica/read-past-hwm", "core/replica", "fetch",
		"a fetch below the high-water mark reads up to the log end", "./core/replica/"},
	{"disk/read-upto-base", "disk", "fetch",
		"a segment read compares a batch's base offset, not its end, with the read limit",
		"./disk/"},
	{"broker/kip74-first-dropped", "core/broker", "fetch",
		"a first batch larger than the partition limit is dropped (KIP-74 ignored)",
		"./core/broker/"},
	{"broker/fetch-session-stale-offset", "core/broker", "fetch",
		"an incremental fetch's new fetch offset is not stored in the session",
		"./core/broker/"},
	{"broker/fetch-session-no-rotate", "core/broker", "fetch",
		"partitions served in a session are not moved to the end of its order",
		"./core/broker/"},
	{"broker/fetch-session-records-only", "core/broker", "fetch",
		"an incremental response lists a partition only when it has records",
		"./core/broker/"},
	{"broker/fetcher-session-forgets-resend", "core/broker", "replication",
		"a follower's session forgets a partition that backs off but still takes it as " +
			"held, so it is never sent again once ready",
		"./core/broker/"},
	{"broker/leader-epoch-inverted", "core/broker", "fencing",
		"a fetch naming an older leader epoch is served instead of FENCED_LEADER_EPOCH",
		"./core/broker/"},
	// Replication, the leader's side.
	{"broker/follower-serves-clients", "core/broker", "replication",
		"a node that follows a partition serves its produces and consumer fetches",
		"./core/broker/"},
	{"broker/hwm-ignores-isr", "core/broker", "replication",
		"the leader's high-water mark ignores its followers: acks=all answered once the " +
			"leader alone holds the batch", "./core/broker/"},
	{"replica/keeps-recovered-hwm", "core/replica", "replication",
		"a restarted replica keeps its recovered log end as its high-water mark when it " +
			"takes a role in a replicated partition", "./core/replica/"},
	{"broker/isr-stale-answer-resets", "core/broker", "replication",
		"an ISR expansion answered INVALID_UPDATE_VERSION is dropped at once, though a " +
			"lost earlier attempt may have committed it: the high-water mark passes the " +
			"follower the committed ISR holds", "./core/broker/"},
	{"broker/hwm-ignores-pending-isr", "core/broker", "replication",
		"while an ISR expansion is pending the high-water mark ignores the follower being " +
			"added (Kafka's maximal ISR)", "./core/broker/"},
	{"broker/delete-records-before-isr", "core/broker", "replication",
		"DeleteRecords is answered once the leader's log start moved, before its ISR " +
			"followers reported theirs (a new leader serves below it)", "./core/broker/"},
	{"broker/diverged-below-start-clamps", "core/broker", "replication",
		"a follower whose log diverges from its leader's below its own log start cuts at " +
			"that start and keeps its old epochs instead of emptying its log (it loops)",
		"./core/broker/"},
	{"broker/list-offsets-lagging-hwm", "core/broker", "replication",
		"a new leader answers ListOffsets(latest) from its high-water mark before it " +
			"reached the start of its leader epoch (KIP-207's OFFSET_NOT_AVAILABLE)",
		"./core/broker/"},
	{"broker/follower-refuses-batch-across-start", "core/broker", "replication",
		"a follower restarted at its leader's log start refuses the leader's batch that " +
			"holds that offset but begins below it, forever", "./core/broker/"},
	{"broker/leads-while-fenced", "core/broker", "replication",
		"a restarted cluster member leads the partitions its image names before the " +
			"controller unfenced this incarnation", "./core/broker/"},
	{"replica/follower-end-kept-max", "core/replica", "replication",
		"the leader keeps the highest end a follower ever reported, so a follower back " +
			"with an empty log looks caught up and rejoins the ISR", "./core/replica/"},
	{"broker/offline-leader-keeps-leading", "core/broker", "replication",
		"a leader whose log went offline keeps leading and shrinks the ISR to itself, " +
			"so the partition stays on the broken disk", "./core/broker/"},
	{"lifecycle/duplicate-id-fatal-at-once", "core/lifecycle", "membership",
		"a node whose registration is refused as a duplicate gives up at once, so a " +
			"node restarted within its session never rejoins", "./core/lifecycle/"},
	{"controller/newcomer-contact-counts", "core/controller", "membership",
		"a new incarnation's own registration attempt, proposed but not committed, " +
			"counts as contact with the registered process and makes its retries " +
			"duplicates", "./core/controller/"},
	{"controller/unclean-elect-clean-only", "core/controller", "replication",
		"an unclean ElectLeaders elects from the ISR only, so a partition whose ISR " +
			"members are all gone stays offline", "./core/controller/"},
	{"controller/conn-close-ignores-fenced", "core/controller", "replication",
		"a fenced broker's closed heartbeat connection is ignored, so once its unfence " +
			"commits the dead broker counts as heard and is elected", "./core/controller/"},
	{"broker/fetcher-stale-conn-full-backoff", "core/broker", "replication",
		"a follower waits the full replica.fetch.backoff.ms after its first transport " +
			"error, so a failover onto a restarted node costs a second more", "./core/broker/"},
	{"broker/fetcher-unknown-topic-full-backoff", "core/broker", "replication",
		"a follower whose leader has not taken up a new partition yet waits out " +
			"replica.fetch.backoff.ms before asking again", "./core/broker/"},
	{"controller/reregister-keeps-leadership", "core/controller", "replication",
		"a restarted broker is unfenced before leadership and ISR places moved off it",
		"./core/controller/"},
	{"controller/keeps-wiped-in-isr", "core/controller", "replication",
		"a broker that registers with a lost data directory keeps the ISR places of its " +
			"old log and is unfenced while in them", "./core/controller/"},
	{"controller/shrinks-isr-to-unheard", "core/controller", "replication",
		"a new controller shrinks an ISR to, and elects, a broker unfenced only on the " +
			"session it assumed at activation", "./core/controller/"},
	{"controller/assumed-contact-blocks-registration", "core/controller", "fencing",
		"a new controller refuses a restarted node's registration as a duplicate on the " +
			"session it assumed for the old one", "./core/controller/"},
	{"controller/reassign-before-isr", "core/controller", "replication",
		"a partition reassignment completes before its adding replicas joined the ISR",
		"./core/controller/"},
	{"controller/heartbeat-keeps-conn-cutoff", "core/controller", "fencing",
		"a heartbeat after a broker's connection closed does not restore its session: a " +
			"live broker whose link was reset is fenced at the grace's end", "./core/controller/"},
	{"controller/unregister-live-broker", "core/controller", "fencing",
		"UnregisterBroker removes a broker that is not fenced or was heard from within " +
			"its session (a live process)", "./core/controller/"},
	{"controller/conn-close-ignores-epoch", "core/controller", "fencing",
		"a closed heartbeat connection of an older broker epoch shortens the session of " +
			"the node's new registration", "./core/controller/"},
	{"broker/offset-commit-before-isr", "core/broker", "replication",
		"an offset commit (and a group record) is answered once the coordinator's own log " +
			"has it durably, before the ISR holds it", "./core/broker/"},
	{"broker/offsets-rf-live-brokers", "core/broker", "replication",
		"__consumer_offsets gets offsets.topic.replication.factor capped to the live brokers, " +
			"not to the registered ones", "./core/broker/"},
	{"broker/offsets-load-before-hwm", "core/broker", "replication",
		"a new leader of an offsets partition loads its groups at once, up to a high-water " +
			"mark that may not cover the commits the old leader acknowledged", "./core/broker/"},
	{"broker/offset-fetch-while-loading", "core/broker", "replication",
		"OffsetFetch is answered from the coordinator's table while its offsets partition " +
			"is still loading", "./core/broker/"},
	// Idempotence.
	{"replica/accept-gap", "core/replica", "idempotence",
		"an idempotent batch ahead of the next sequence is appended", "./core/replica/"},
	{"replica/window-1", "core/replica", "idempotence",
		"only the last batch per producer is remembered for duplicates", "./core/replica/"},
	{"replica/unknown-producer-any-seq", "core/replica", "idempotence",
		"a producer the partition does not know may start at any sequence",
		"./core/replica/"},
	{"replica/new-epoch-any-seq", "core/replica", "idempotence",
		"a producer's new epoch may start at any sequence", "./core/replica/"},
	{"replica/stale-producer-epoch", "core/replica", "fencing",
		"a batch from an older producer epoch is not fenced", "./core/replica/"},
	{"replica/snapshot-only-recovery", "core/replica", "idempotence",
		"after a restart the producer table comes from the snapshot alone, batches after " +
			"it not rescanned", "./core/replica/"},
	{"replica/no-snapshot-before-delete", "core/replica", "idempotence",
		"retention and DeleteRecords delete a producer's batches with no snapshot covering " +
			"them", "./core/replica/"},
	{"replica/reports-survive-follow", "core/replica", "replication",
		"a replica keeps what its followers reported while it led, through a term as a " +
			"follower: led again, it counts a follower that was cut back at its old end",
		"./core/replica/"},
	{"replica/fresh-survives-step", "core/replica", "replication",
		"the leader keeps the last batch it appended past the step and serves it to a " +
			"follower fetching at its offset, even after its log was cut and rewritten",
		"./core/replica/"},
	{"replica/cover-snapshot-at-log-end", "core/replica", "idempotence",
		"the snapshot before retention or DeleteRecords is taken at the log end, where a " +
			"follower's truncation deletes it", "./core/replica/"},
	// Retention and DeleteRecords.
	{"replica/retention-seconds", "core/replica", "retention",
		"retention.ms read as seconds: segments expire 1000x too early", "./core/replica/"},
	{"replica/retention-bytes-total", "core/replica", "retention",
		"retention.bytes compared with the size before the segment goes, not after",
		"./core/replica/"},
	{"replica/retention-ignores-hwm", "core/replica", "retention",
		"retention may delete a segment reaching above the high-water mark",
		"./core/replica/"},
	{"replica/delete-records-past", "core/replica", "retention",
		"DeleteRecords starts the log one record after the offset asked", "./core/replica/"},
	{"replica/delete-records-to-end", "core/replica", "retention",
		"DeleteRecords accepts an offset up to the log end, past the high-water mark",
		"./core/replica/"},
	// Indexes.
	{"disk/offset-index-next", "disk", "indexes",
		"the offset index lookup returns the entry after the one at or before the offset",
		"./disk/"},
	{"disk/time-index-next", "disk", "indexes",
		"the time index lookup returns the first entry at or after the time, skipping " +
			"unindexed batches before it", "./disk/"},
	// Compaction (disk/compact*.go).
	{"disk/clean-drops-last-value", "disk", "compaction",
		"the cleaner removes a key's record when the key map holds that very offset, so " +
			"the last value of a key goes", "./disk/"},
	{"disk/clean-active-segment", "disk", "compaction",
		"the cleaner ignores its upper bound and rewrites every segment, the active one " +
			"included", "./disk/"},
	// Recovery and record validation.
	{"disk/recovery-skips-crc", "disk", "recovery",
		"recovery accepts a batch whose CRC does not match", "./disk/"},
	{"disk/recovery-offsets-unchecked", "disk", "recovery",
		"recovery accepts a batch whose base offset does not follow the previous one",
		"./disk/"},
	{"disk/recovery-no-truncate", "disk", "recovery",
		"recovery stops at a torn tail but does not truncate it", "./disk/"},
	{"batch/crc-unchecked", "core/batch", "recovery",
		"batch.Check skips the CRC comparison", "./core/batch/"},
	{"batch/trailing-ok", "core/batch", "validation",
		"bytes after the last counted record are not looked at", "./core/batch/"},
	{"batch/delta-unchecked", "core/batch", "validation",
		"record offset deltas are parsed but never compared", "./core/batch/"},
	{"batch/count-trusted", "core/batch", "validation",
		"records that end early end the walk without an error", "./core/batch/"},
	// Authorization.
	{"broker/authorize-stale-acls", "core/broker", "authorization",
		"requests are decided on a cache of the ACLs that learns creations but not " +
			"deletions, so a revoked principal keeps its rights", "./core/broker/"},
	// Groups.
	{"group/stale-commit", "core/group", "groups",
		"OffsetCommit from a known member of an older generation accepted", "./core/group/"},
	{"group/no-generation-bump", "core/group", "groups",
		"rebalances after the first keep generation 1", "./core/group/"},
	// Admin changes forwarded to the controller's node.
	{"broker/forward-answers-early", "core/broker", "admin",
		"a node answers a forwarded admin change (CreateAcls...) as done once it sent it to " +
			"the controller's node, before that node committed it", "./core/broker/"},
	// The metadata quorum.
	{"raftmeta/wiped-votes", "runtime/raftmeta", "quorum",
		"a voter whose raft store was wiped votes at once, before it has caught up with " +
			"the quorum's log", "./runtime/raftmeta/"},
}

// Find returns the catalogue entry named name.
func Find(name string) (Mutant, bool) {
	for _, m := range Catalogue {
		if m.Name == name {
			return m, true
		}
	}
	return Mutant{}, false
}
