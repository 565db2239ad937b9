package sim

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Spell describes one intermittent fault: it starts on average every EveryMs of virtual
// time (exponential arrivals) and lasts on average ForMs.
type Spell struct {
	On      bool
	EveryMs int64
	ForMs   int64
}

func (s Spell) String() string {
	if !s.On {
		return "off"
	}
	return fmt.Sprintf("every~%dms for~%dms", s.EveryMs, s.ForMs)
}

// Faults is the one options struct holding every fault kind the world can inject. Each
// field is drawn per seed (swarm testing), can be overridden with --set faults.<name>,
// and is printed in the run summary.
type Faults struct {
	// Crash: the node's machine loses power (unsynced bytes lost, the last write may
	// tear, pending I/O dropped), stays down ~ForMs, then restarts and recovers.
	Crash Spell
	// SlowDisk: for a spell, fsync latency is multiplied by SlowDiskFactor.
	SlowDisk       Spell
	SlowDiskFactor int64
	// DiskErrors: for a spell, each write or fsync fails with DiskErrorChance (EIO or
	// ENOSPC). After the run heals, nodes that saw errors are restarted (process restart)
	// so offline partitions recover.
	DiskErrors      Spell
	DiskErrorChance float64
	// Clog: for a spell, every network path to the node is ClogFactor times slower.
	Clog       Spell
	ClogFactor int64
	// Reset: a random open connection is reset; its in-flight requests have unknown
	// outcome (ForMs unused).
	Reset Spell
	// Partition: a client cannot reach the node (or, with OneWayChance, only one
	// direction is cut) for a spell. Messages wait for the heal, as TCP retransmits.
	Partition    Spell
	OneWayChance float64
	// Pause: the node stops stepping for a spell (a GC pause, SIGSTOP); its inputs queue.
	Pause Spell
	// Restart: the node's process is killed (kill -9) and restarts ~ForMs later; unlike
	// a crash the machine keeps its page cache, so unsynced writes survive. An operator
	// restart also brings back partitions that went offline after disk errors.
	Restart Spell
	// MetaErrors: for a spell, each metadata proposal from the node fails with
	// MetaErrorChance: the metadata log does not append it and answers MetaCommitted
	// with an error (a definite failure: the record never commits).
	MetaErrors      Spell
	MetaErrorChance float64
	// MetaUnknownChance: each metadata proposal, at any time, is answered "outcome
	// unknown" with this chance; its record then commits or never does, half and half
	// (sim/metalog.go). Set with faults.metaunknown=P.
	MetaUnknownChance float64
	// ReadErrors: for a spell, each read of a file (ReadAt, ReadDir) fails with EIO
	// with ReadErrorChance: fetches, index and timestamp lookups, and the recovery of a
	// node restarting meanwhile. Nodes that saw one restart their process at the heal.
	ReadErrors      Spell
	ReadErrorChance float64
	// Rot: a synced byte of a partition's segment flips at rest (bit rot), ~EveryMs
	// apart (ForMs unused). The broker must detect it (CRC) and never serve it; the
	// partition goes offline until a restart, whose recovery starts the log after the
	// rotten batch (rot.go). StaleWrites: at each crash, each file with unsynced bytes
	// shows, with StaleWriteChance, stale blocks (a copy of its beginning: well-framed,
	// CRC-valid batches of other offsets) in their place before the tear (only On is
	// used).
	Rot              Spell
	StaleWrites      Spell
	StaleWriteChance float64
	// The cluster kinds (faults_cluster.go), only in worlds of more than one node.
	// Split: the nodes fall into two drawn sides that cannot reach each other, both
	// ways, for a spell. OneWay: one drawn node's messages to another are dropped (the
	// other direction works). QuorumLeader: the metadata quorum leader is cut off from
	// every other node, both ways. LeaderPeers: a drawn partition's leader is cut off
	// from its followers, both ways. Clients reach every node throughout.
	Split, OneWay, QuorumLeader, LeaderPeers Spell
	// DiskLoss: a node's machine dies and restarts ~ForMs later over an empty disk
	// (data, state store, metadata log); DiskLossLastISR lets it strike the only ISR
	// member of a partition whose ISR is below min.insync.replicas too. PowerLoss:
	// every node loses power at the same instant and restarts ~ForMs later.
	DiskLoss        Spell
	DiskLossLastISR bool
	PowerLoss       Spell
	// Cascade: a follower's replica fetcher sticks, another follower restarts, then
	// the leader is killed: the restarted one is elected with a lagging ISR member
	// (faults_cascade.go); ForMs is how long the fetcher stays stuck after the kill.
	Cascade Spell
	// ClockSkewMs: each node incarnation's wall clock is offset by up to ±ClockSkewMs
	// (0: off). Virtual monotonic time never goes back within one incarnation.
	ClockSkewMs int64
}

// Timing holds the latency distributions: exponential with a floor, in microseconds.
type Timing struct {
	NetFloorUs, NetMeanUs     int64
	FsyncFloorUs, FsyncMeanUs int64
	MetaFloorUs, MetaMeanUs   int64
	RestartDelayMs            int64 // time a restarting process takes before Start
	// IOFloorUs per file operation plus ~IOMeanUs per step: the event loop's I/O
	// (iolat.go); IOMeanUs 0 turns it off.
	IOFloorUs, IOMeanUs int64
}

// TopicSpec is one topic the admin client creates at the start.
type TopicSpec struct {
	Name       string
	Partitions int32
	Configs    map[string]string // topic config overrides
}

// ProducerSpec configures one producer client.
type ProducerSpec struct {
	Topic       string
	Acks        int16 // 0, 1 or -1 (all)
	Idempotent  bool  // requires Acks == -1, as in Kafka
	BatchMax    int   // records per batch: 1..BatchMax
	Keys        int   // distinct keys
	MaxInFlight int   // per partition, <= 5
	PartsPerReq int   // partitions per Produce request, >= 1
	IntervalMs  int64 // mean time between new batches
	TimeoutMs   int64 // request timeout
	BackoffMs   int64 // retry backoff
	QueueMax    int   // unacknowledged batches per partition before it stops making more
}

// ReaderSpec configures one reader client.
type ReaderSpec struct {
	Topic       string
	MaxWaitMs   int32
	MinBytes    int32
	MaxBytes    int32
	PartMax     int32 // per-partition max bytes
	TimeoutMs   int64
	SeekChance  float64 // per fetch: jump to a random offset in [start, HWM]
	ListChance  float64 // per fetch: also ask ListOffsets latest
	BackoffMs   int64
	IdleEveryMs int64
	TinyChance  float64 // per fetch: limits smaller than a batch (widen.go)
	// Sessions: fetch through an incremental fetch session (KIP-227), as franz-go and
	// librdkafka do, resending only partitions whose position moved (reader_session.go).
	Sessions bool
}

// CommitterSpec configures one offset committer.
type CommitterSpec struct {
	Topic      string
	Groups     int     // distinct groups it commits for
	EveryMs    int64   // mean time between operations
	TimeoutMs  int64   // request timeout
	ReadChance float64 // per operation: fetch the committed offset instead of committing
}

// MemberSpec configures one consumer-group member (member.go). Members of one group
// share Group and Topic.
type MemberSpec struct {
	Group       string
	Topic       string
	Protocols   []string // assignors in order of preference: "range", "roundrobin"
	SessionMs   int32    // clamped to the broker's group.min/max.session.timeout.ms
	RebalanceMs int32
	TimeoutMs   int64   // request timeout of everything but JoinGroup and SyncGroup
	BackoffMs   int64   // after an error
	CommitMs    int64   // mean time between offset commits (0: never commits)
	ChurnMs     int64   // mean time between leaving, vanishing or stalling (0: never)
	StaleChance float64 // after a rebalance: commit once more as the previous generation
	// SyncStallChance: per generation joined, stall before SyncGroup (member_stall.go).
	SyncStallChance float64
}

// AdminSpec configures the admin client's changes after the initial topic creation.
type AdminSpec struct {
	On            bool
	EveryMs       int64
	MaxPartitions int32
	// TrimChance: each change is a DeleteRecords of one partition with this chance
	// (drawn after every older choice; 0 keeps a seed's older trace).
	TrimChance float64
	// QuotaBytes > 0: once the topics exist, the admin sets producer_byte_rate and
	// consumer_byte_rate of client-id=<default> to it (AlterClientQuotas), so every
	// client is throttled and its connections muted (rule E8) when over it; 0 (the
	// default) sets none and keeps every seed's trace.
	QuotaBytes int64
	// QuotaPercent > 0: the admin also sets request_percentage of client-id=<default>
	// to it, charged with each request step's virtual I/O time (iolat.go
	// reportHandlerTime); 0 (the default) sets none and keeps every seed's trace.
	QuotaPercent float64
	// ReassignChance: on a cluster, each change is, with this chance (drawn after every
	// older choice; 0, the default, keeps a seed's older trace), a partition
	// reassignment to random brokers or a cancel (AlterPartitionReassignments, reassign.go).
	ReassignChance float64
}

// DeleteSpec: a deleter client deletes a topic no committer or group uses now and
// then (~EveryMs apart), and re-creates it ~GapMs later, with its original configs and
// at least as many partitions as it ever had, so the producers and readers bound to it
// meet UNKNOWN_TOPIC_OR_PARTITION, auto-creation and a log restarting at offset 0.
type DeleteSpec struct {
	On      bool
	EveryMs int64
	GapMs   int64
}

// VandalSpec configures a vandal client (vandal.go): malformed-but-CRC-valid batches
// to Topic, ~EveryMs apart, each of which the broker must refuse.
type VandalSpec struct {
	Topic     string
	Acks      int16 // 1 or -1: a vandal wants to hear the verdict
	EveryMs   int64
	TimeoutMs int64
	// BadCRCChance: per batch, well-formed records under a wrong CRC (widen.go).
	BadCRCChance float64
}

// Config is one run's complete configuration. Draw derives it from a seed; Set
// overrides single fields afterwards.
type Config struct {
	Seed       uint64
	Nodes      int
	SafetyMs   int64 // virtual time with faults and load
	HealMs     int64 // liveness budget after the faults stop
	Codec      bool  // pass every request and response through the wire codec
	MaxVers    bool  // clients use the highest version (else a random one per client)
	Broker     map[string]string
	Faults     Faults
	Timing     Timing
	Topics     []TopicSpec
	Producers  []ProducerSpec
	Readers    []ReaderSpec
	Admin      AdminSpec
	Committers []CommitterSpec
	Members    []MemberSpec
	Deletes    DeleteSpec
	Vandals    []VandalSpec
	Audit      AuditSpec   // auditor.go
	Zombie     ZombieSpec  // zombie.go
	Compact    CompactSpec // compact.go: the compacted topic's workload
	ACLs       ACLSpec     // acls.go
	// StrictAcks1 (--set acks=1): the checker holds acknowledged acks=1 writes to
	// acks=all's promise, never lost, which a leader failover breaks (the unsafe-settings
	// check; producer.acks=1 keeps Kafka's weaker acks=1 promise).
	StrictAcks1 bool
}

// DefaultSafetyMs is the default virtual run time of the safety phase.
const DefaultSafetyMs = 8_000

// Draw derives a run's configuration from its seed: the swarm-testing step. Everything
// that varies between runs is drawn here, before any event, from the "config" stream.
func Draw(seed uint64) Config {
	r := newStream(seed, "config")
	c := Config{Seed: seed, Nodes: drawNodes(seed), SafetyMs: DefaultSafetyMs, HealMs: 30_000,
		Codec: r.Chance(0.5), MaxVers: r.Chance(0.5), Broker: map[string]string{}}
	c.Broker["log.retention.check.interval.ms"] = strconv.Itoa(Pick(r, 200, 1000, 5000))
	c.Broker["num.partitions"] = strconv.Itoa(1 + r.Intn(3))
	c.Timing = drawTiming(r)
	c.Faults = drawFaults(r)
	nTopics := 1 + r.Intn(2)
	for i := 0; i < nTopics; i++ {
		c.Topics = append(c.Topics, drawTopic(r, i))
	}
	for i, n := 0, 1+r.Intn(4); i < n; i++ {
		c.Producers = append(c.Producers, drawProducer(r, c.Topics[r.Intn(nTopics)].Name))
	}
	for i, n := 0, 1+r.Intn(3); i < n; i++ {
		c.Readers = append(c.Readers, drawReader(r, c.Topics[r.Intn(nTopics)].Name))
	}
	c.Admin = AdminSpec{On: r.Chance(0.5), EveryMs: r.Between(300, 3000),
		MaxPartitions: int32(r.Between(2, 6))}
	// New draws go last so that existing choices of a seed stay as they were.
	for i, n := 0, r.Intn(3); i < n; i++ {
		c.Committers = append(c.Committers, CommitterSpec{Topic: c.Topics[r.Intn(nTopics)].Name,
			Groups: 1 + r.Intn(3), EveryMs: Pick[int64](r, 5, 50, 300),
			TimeoutMs: Pick[int64](r, 500, 3000), ReadChance: Pick(r, 0.3, 0.6)})
	}
	c.Faults.MetaErrors = drawSpell(r, 0.3, 500, 4000, 50, 2000)
	c.Faults.MetaErrorChance = Pick(r, 0.1, 0.5, 1.0)
	drawMembers(r, &c)
	c.Faults.ReadErrors = drawSpell(r, 0.25, 500, 4000, 10, 1000)
	c.Faults.ReadErrorChance = Pick(r, 0.05, 0.3, 1.0)
	c.Deletes = DeleteSpec{On: r.Chance(0.5), EveryMs: r.Between(500, 4000),
		GapMs: Pick[int64](r, 0, 50, 500)}
	if r.Chance(0.5) {
		c.Admin.TrimChance = Pick(r, 0.2, 0.5)
	}
	if r.Chance(0.5) {
		c.Vandals = append(c.Vandals, drawVandal(r, c.Topics[r.Intn(nTopics)].Name))
	}
	// The auditor (auditor.go) is drawn after every older choice.
	c.Audit = AuditSpec{On: r.Chance(0.5), EveryMs: Pick[int64](r, 30, 100, 400)}
	// A creation opens its logs a chunk per step (core/broker/open_queue.go); chunks of
	// one or two make the few partitions of a run take that path, across crashes too.
	c.Broker["sluice.open.logs.per.step"] = strconv.Itoa(Pick(r, 1, 2, 64))
	// Producer-state snapshots every few batches (the default is 20,000, more than a
	// seed writes), so restarts recover from a snapshot followed by more batches.
	c.Broker["sluice.producer.snapshot.interval.batches"] = strconv.Itoa(int(r.Between(5, 50)))
	drawWider(r, &c) // widen.go: issue 7's wider workload
	// Corruption at rest (rot.go), drawn after every older choice.
	c.Faults.Rot = drawSpell(r, 0.2, 1000, 5000, 0, 0)
	c.Faults.StaleWrites = Spell{On: r.Chance(0.3)}
	c.Faults.StaleWriteChance = Pick(r, 0.2, 0.5, 1.0)
	// Read and write latency of the event loop (iolat.go), on 70% of seeds when
	// ioLatencyByDefault (docs/simulation.md, "I/O latency"); the chance is drawn either
	// way, so the choices after it do not depend on the switch.
	if r.Chance(0.7) && ioLatencyByDefault {
		c.Timing.IOFloorUs, c.Timing.IOMeanUs = r.Between(1, 20), Pick[int64](r, 10, 100, 1000)
	}
	// Unknown metadata outcomes (metalog.go), drawn after every older choice.
	c.Faults.MetaUnknownChance = Pick(r, 0.0, 0.0, 0.02, 0.1)
	drawSyncStalls(r, &c) // member_stall.go, after every older choice
	drawClusterFaults(r, &c)
	drawCompact(r, &c)         // compact.go, after every older choice
	drawCascadeFault(r, &c)    // faults_cascade.go, after every older choice
	drawACLs(r, &c)            // acls.go, after every older choice
	drawOffsetsCleaning(r, &c) // compact.go, after every older choice
	return c
}

// drawNodes draws the run's node count (docs/simulation.md, "Clusters"): three on 70% of
// seeds, one on 20%, five on 10%. It comes from a stream of its own, "nodes", so it is
// known before any other choice (a cluster-only choice may consult it) and no draw added
// to the "config" stream later moves it; every other choice of a seed is as it was before
// clusters became the default. --set nodes=N overrides it; nodes=1 is the one-node world.
func drawNodes(seed uint64) int {
	switch n := newStream(seed, "nodes").Intn(10); {
	case n < 2:
		return 1
	case n < 9:
		return 3
	default:
		return 5
	}
}

func drawVandal(r *Rand, topic string) VandalSpec {
	return VandalSpec{Topic: topic, Acks: Pick[int16](r, 1, -1),
		EveryMs: Pick[int64](r, 20, 200, 1000), TimeoutMs: Pick[int64](r, 500, 3000)}
}

// drawMembers draws the consumer groups: on half the seeds, one or two groups of 1–4
// members each. The broker's group settings are only set when there are members, so
// seeds without them keep their configuration and trace.
func drawMembers(r *Rand, c *Config) {
	if !r.Chance(0.5) {
		return
	}
	setGroupBroker(c, Pick(r, 100, 300, 1000), Pick(r, 0, 100, 1000, 3000))
	minSession := c.groupMinSession()
	for g, ng := 0, 1+r.Intn(2); g < ng; g++ {
		topic := c.Topics[r.Intn(len(c.Topics))].Name
		churn := Pick[int64](r, 0, 1000, 3000, 8000)
		commit := Pick[int64](r, 0, 20, 200)
		stale := Pick(r, 0.0, 0.5, 1.0)
		for i, n := 0, 1+r.Intn(4); i < n; i++ {
			session := r.Between(int64(minSession), max(int64(minSession), 4000))
			// At least the session timeout, as Kafka clients' (max.poll.interval.ms)
			// is: members learn of a rebalance at their next heartbeat, a third of a
			// session away, and one that cannot rejoin in time is dropped; with a
			// shorter rebalance timeout the group can cycle forever, half of it
			// rejoining while the other half is dropped.
			m := MemberSpec{Group: fmt.Sprintf("cg%d", g), Topic: topic,
				Protocols: []string{"range", "roundrobin"}, SessionMs: int32(session),
				RebalanceMs: int32(r.Between(session, max(session, min(2*session, 6000)))),
				TimeoutMs:   Pick[int64](r, 300, 2000), BackoffMs: Pick[int64](r, 10, 100),
				CommitMs: commit, ChurnMs: churn, StaleChance: stale}
			if r.Chance(0.5) {
				m.Protocols = []string{"roundrobin", "range"}
			}
			c.Members = append(c.Members, m)
		}
	}
}

// setGroupBroker sets the broker's group settings members need (short sessions, so a
// few seconds of virtual time see many rebalances), unless the run already has them.
func setGroupBroker(c *Config, minSessionMs, initialDelayMs int) {
	if _, ok := c.Broker["group.min.session.timeout.ms"]; !ok {
		c.Broker["group.min.session.timeout.ms"] = strconv.Itoa(minSessionMs)
	}
	if _, ok := c.Broker["group.initial.rebalance.delay.ms"]; !ok {
		c.Broker["group.initial.rebalance.delay.ms"] = strconv.Itoa(initialDelayMs)
	}
}

func (c *Config) groupMinSession() int32 {
	n, err := strconv.Atoi(c.Broker["group.min.session.timeout.ms"])
	if err != nil {
		return 6000
	}
	return int32(n)
}

func drawTiming(r *Rand) Timing {
	return Timing{
		NetFloorUs: r.Between(20, 300), NetMeanUs: Pick[int64](r, 50, 300, 2000, 10000),
		FsyncFloorUs: r.Between(50, 1000), FsyncMeanUs: Pick[int64](r, 100, 1000, 5000),
		MetaFloorUs: r.Between(100, 2000), MetaMeanUs: Pick[int64](r, 500, 3000, 20000),
		RestartDelayMs: r.Between(5, 200),
	}
}

func drawSpell(r *Rand, p float64, everyLo, everyHi, forLo, forHi int64) Spell {
	return Spell{On: r.Chance(p), EveryMs: r.Between(everyLo, everyHi),
		ForMs: r.Between(forLo, forHi)}
}

func drawFaults(r *Rand) Faults {
	f := Faults{
		Crash:      drawSpell(r, 0.4, 1000, 4000, 50, 1500),
		SlowDisk:   drawSpell(r, 0.4, 300, 3000, 50, 2000),
		DiskErrors: drawSpell(r, 0.25, 1000, 5000, 10, 500),
		Clog:       drawSpell(r, 0.3, 500, 3000, 50, 1500),
		Reset:      drawSpell(r, 0.4, 100, 2000, 0, 0),
		Partition:  drawSpell(r, 0.3, 500, 4000, 50, 3000),
		Pause:      drawSpell(r, 0.3, 500, 4000, 10, 1500),
	}
	f.SlowDiskFactor = Pick[int64](r, 5, 20, 100)
	f.DiskErrorChance = Pick(r, 0.01, 0.1, 0.5)
	f.ClogFactor = Pick[int64](r, 10, 100)
	f.OneWayChance = Pick(r, 0.0, 0.5)
	if r.Chance(0.4) {
		f.ClockSkewMs = Pick[int64](r, 10, 1000, 60_000)
	}
	f.Restart = drawSpell(r, 0.3, 1000, 4000, 5, 500)
	return f
}

func drawTopic(r *Rand, i int) TopicSpec {
	t := TopicSpec{Name: fmt.Sprintf("t%d", i), Partitions: int32(1 + r.Intn(4)),
		Configs: map[string]string{}}
	if r.Chance(0.6) {
		t.Configs["segment.bytes"] = strconv.Itoa(Pick(r, 1024, 4096, 65536))
	}
	if r.Chance(0.2) {
		t.Configs["segment.ms"] = strconv.Itoa(Pick(r, 100, 1000))
	}
	if r.Chance(0.25) {
		t.Configs["retention.ms"] = strconv.Itoa(Pick(r, 500, 3000, 10000))
	}
	if r.Chance(0.25) {
		t.Configs["retention.bytes"] = strconv.Itoa(Pick(r, 2048, 16384))
	}
	if r.Chance(0.2) {
		t.Configs["message.timestamp.type"] = "LogAppendTime"
	}
	if r.Chance(0.2) {
		t.Configs["index.interval.bytes"] = strconv.Itoa(Pick(r, 0, 100, 1000))
	}
	return t
}

func drawProducer(r *Rand, topic string) ProducerSpec {
	p := ProducerSpec{Topic: topic, Acks: Pick[int16](r, 0, 1, -1, -1),
		BatchMax: Pick(r, 1, 5, 20), Keys: Pick(r, 1, 4, 50),
		MaxInFlight: 1 + r.Intn(5), PartsPerReq: 1 + r.Intn(3),
		IntervalMs: Pick[int64](r, 2, 10, 50), TimeoutMs: Pick[int64](r, 300, 1000, 5000),
		BackoffMs: Pick[int64](r, 10, 100, 500), QueueMax: Pick(r, 5, 20)}
	p.Idempotent = p.Acks == -1 && r.Chance(0.6)
	return p
}

func drawReader(r *Rand, topic string) ReaderSpec {
	return ReaderSpec{Topic: topic, MaxWaitMs: int32(Pick(r, 0, 50, 500)),
		MinBytes: int32(Pick(r, 1, 1, 1000)), MaxBytes: int32(Pick(r, 1000, 100000, 1<<20)),
		PartMax: int32(Pick(r, 500, 10000, 1<<20)), TimeoutMs: Pick[int64](r, 1000, 5000),
		SeekChance: Pick(r, 0.0, 0.02, 0.1), ListChance: Pick(r, 0.0, 0.1, 0.3),
		BackoffMs: Pick[int64](r, 10, 100), IdleEveryMs: Pick[int64](r, 0, 200),
		Sessions: r.Chance(0.5)}
}

// faultSpells maps --set faults.<name> to the spell it switches.
func (c *Config) faultSpells() map[string]*Spell {
	f := &c.Faults
	return map[string]*Spell{"crash": &f.Crash, "slowdisk": &f.SlowDisk,
		"diskerrors": &f.DiskErrors, "clog": &f.Clog, "reset": &f.Reset,
		"partition": &f.Partition, "pause": &f.Pause, "restart": &f.Restart,
		"metaerrors": &f.MetaErrors, "readerrors": &f.ReadErrors, "rot": &f.Rot,
		"stalewrites": &f.StaleWrites, "split": &f.Split, "oneway": &f.OneWay,
		"quorumleader": &f.QuorumLeader, "leaderpeers": &f.LeaderPeers,
		"diskloss": &f.DiskLoss, "powerloss": &f.PowerLoss, "cascade": &f.Cascade}
}

// Summary describes the configuration in a few lines, sorted where maps are involved.
func (c Config) Summary() []string {
	f := c.Faults
	lines := []string{
		fmt.Sprintf("nodes=%d safety=%dms heal=%dms codec=%v maxversions=%v",
			c.Nodes, c.SafetyMs, c.HealMs, c.Codec, c.MaxVers),
		fmt.Sprintf("faults: crash=%s slowdisk=%s(x%d) diskerrors=%s(p=%.2f) clog=%s(x%d)",
			f.Crash, f.SlowDisk, f.SlowDiskFactor, f.DiskErrors, f.DiskErrorChance, f.Clog,
			f.ClogFactor),
		fmt.Sprintf("faults: reset=%s partition=%s(oneway=%.1f) pause=%s skew=%dms restart=%s",
			f.Reset, f.Partition, f.OneWayChance, f.Pause, f.ClockSkewMs, f.Restart),
		fmt.Sprintf("faults: metaerrors=%s(p=%.2f) metaunknown=%.2f readerrors=%s(p=%.2f)",
			f.MetaErrors, f.MetaErrorChance, f.MetaUnknownChance, f.ReadErrors,
			f.ReadErrorChance),
		fmt.Sprintf("faults: rot=%s stalewrites=%s(p=%.2f)", f.Rot, f.StaleWrites,
			f.StaleWriteChance),
		fmt.Sprintf("faults (nodes>1): split=%s oneway=%s quorumleader=%s leaderpeers=%s",
			f.Split, f.OneWay, f.QuorumLeader, f.LeaderPeers),
		fmt.Sprintf("faults (nodes>1): diskloss=%s(lastisr=%v) powerloss=%s cascade=%s",
			f.DiskLoss, f.DiskLossLastISR, f.PowerLoss, f.Cascade),
		fmt.Sprintf("timing: net=%d+~%dus fsync=%d+~%dus meta=%d+~%dus io=%d/op+~%dus",
			c.Timing.NetFloorUs, c.Timing.NetMeanUs, c.Timing.FsyncFloorUs,
			c.Timing.FsyncMeanUs, c.Timing.MetaFloorUs, c.Timing.MetaMeanUs,
			c.Timing.IOFloorUs, c.Timing.IOMeanUs),
		"broker: " + sortedKV(c.Broker),
	}
	for _, t := range c.Topics {
		lines = append(lines, fmt.Sprintf("topic %s partitions=%d %s", t.Name,
			t.Partitions, sortedKV(t.Configs)))
	}
	for i, p := range c.Producers {
		lines = append(lines, fmt.Sprintf("producer %d: %+v", i, p))
	}
	for i, r := range c.Readers {
		lines = append(lines, fmt.Sprintf("reader %d: %+v", i, r))
	}
	for i, cm := range c.Committers {
		lines = append(lines, fmt.Sprintf("committer %d: %+v", i, cm))
	}
	for i, m := range c.Members {
		lines = append(lines, fmt.Sprintf("member %d: %+v", i, m))
	}
	for i, v := range c.Vandals {
		lines = append(lines, fmt.Sprintf("vandal %d: %+v", i, v))
	}
	lines = append(lines, fmt.Sprintf("admin: %+v", c.Admin))
	if c.Audit.On {
		lines = append(lines, fmt.Sprintf("audit: every~%dms freshtrim=%.2f", c.Audit.EveryMs,
			c.Audit.FreshTrimChance))
	}
	if c.Zombie.On {
		lines = append(lines, fmt.Sprintf("zombie: %+v", c.Zombie))
	}
	if c.Compact.On {
		lines = append(lines, "compaction: "+c.Compact.String())
	}
	if s := c.aclSummary(); s != "" {
		lines = append(lines, s)
	}
	if c.Deletes.On {
		lines = append(lines, fmt.Sprintf("deletes: every~%dms gap~%dms topics=%v",
			c.Deletes.EveryMs, c.Deletes.GapMs, c.deletableTopics()))
	}
	return lines
}

func sortedKV(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, " ")
}
