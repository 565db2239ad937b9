package sim

import (
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/probe"
)

// Coverage is what one world (or, after Add, a sweep) reached, in the spirit of
// FoundationDB's code probes: the code probes of core/ it hit (package probe) and each
// (API, error code) pair the broker answered. Collected only with Options.Coverage; it
// changes nothing in the run (no randomness drawn, nothing hashed).
type Coverage struct {
	Probes *probe.Set
	Pairs  map[Pair]uint64
	Seeds  int
}

// Pair is one API key answered with one error code (0 included: the API was served).
type Pair struct {
	API  int16
	Code int16
}

func (p Pair) String() string {
	name := "NONE"
	if p.Code != 0 {
		name = errName(p.Code)
	}
	return kmsg.NameForKey(p.API) + " " + name
}

// NewCoverage returns an empty coverage record.
func NewCoverage() *Coverage {
	return &Coverage{Probes: probe.NewSet(), Pairs: map[Pair]uint64{}}
}

// Add folds o into c (aggregating seeds).
func (c *Coverage) Add(o *Coverage) {
	if o == nil {
		return
	}
	c.Probes.Add(o.Probes)
	for p, n := range o.Pairs {
		c.Pairs[p] += n
	}
	c.Seeds += o.Seeds
}

// noteReply counts every error code a response carries, at any depth (top-level,
// per topic, per partition, per resource, per member).
func (c *Coverage) noteReply(resp kmsg.Response) {
	if resp == nil {
		return
	}
	key := resp.Key()
	seen := map[int16]bool{}
	collectCodes(reflect.ValueOf(resp), seen)
	if len(seen) == 0 {
		seen[0] = true // a response without error fields (ApiVersions has one; safety)
	}
	for code := range seen {
		c.Pairs[Pair{API: key, Code: code}]++
	}
}

// collectCodes walks v and adds every int16 field named ErrorCode to seen. Byte
// slices (record batches, metadata) are not walked.
func collectCodes(v reflect.Value, seen map[int16]bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			collectCodes(v.Elem(), seen)
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if t.Field(i).Name == "ErrorCode" && f.Kind() == reflect.Int16 {
				seen[int16(f.Int())] = true
				continue
			}
			switch f.Kind() {
			case reflect.Struct, reflect.Slice, reflect.Pointer:
				collectCodes(f, seen)
			}
		}
	case reflect.Slice:
		if k := v.Type().Elem().Kind(); k != reflect.Struct && k != reflect.Pointer {
			return
		}
		for i := 0; i < v.Len(); i++ {
			collectCodes(v.Index(i), seen)
		}
	}
}

// ExpectedPairs are (API, error code) pairs a sweep of default seeds should produce:
// the stale and hostile forms the clients send on purpose. The report lists the ones
// it never saw, and a test requires a few of them (coverage_test.go).
var ExpectedPairs = []Pair{
	{int16(kmsg.Fetch), kerr.OffsetOutOfRange.Code},
	{int16(kmsg.Fetch), kerr.FencedLeaderEpoch.Code},
	{int16(kmsg.Fetch), kerr.UnknownLeaderEpoch.Code},
	{int16(kmsg.Fetch), kerr.FetchSessionIDNotFound.Code},
	{int16(kmsg.ListOffsets), kerr.FencedLeaderEpoch.Code},
	{int16(kmsg.ListOffsets), kerr.UnknownLeaderEpoch.Code},
	{int16(kmsg.OffsetForLeaderEpoch), 0},
	{int16(kmsg.OffsetForLeaderEpoch), kerr.FencedLeaderEpoch.Code},
	{int16(kmsg.OffsetForLeaderEpoch), kerr.UnknownLeaderEpoch.Code},
	{int16(kmsg.Produce), kerr.OutOfOrderSequenceNumber.Code},
	{int16(kmsg.Produce), kerr.MessageTooLarge.Code},
	{int16(kmsg.Produce), kerr.UnsupportedVersion.Code},
	{int16(kmsg.Produce), kerr.InvalidRequiredAcks.Code},
	{int16(kmsg.Produce), kerr.InvalidProducerEpoch.Code}, // the zombie producer
	{int16(kmsg.Produce), kerr.CorruptMessage.Code},       // bad-CRC vandal batches
	{int16(kmsg.SyncGroup), kerr.UnknownMemberID.Code},
	{int16(kmsg.Heartbeat), kerr.UnknownMemberID.Code},
	{int16(kmsg.LeaveGroup), kerr.UnknownMemberID.Code},
	{int16(kmsg.OffsetCommit), kerr.IllegalGeneration.Code},
	{int16(kmsg.OffsetCommit), kerr.UnknownMemberID.Code},
	{int16(kmsg.DeleteRecords), 0},
	{int16(kmsg.DeleteRecords), kerr.OffsetOutOfRange.Code},
	{int16(kmsg.DescribeConfigs), 0},
	{int16(kmsg.AlterConfigs), 0},
	{int16(kmsg.IncrementalAlterConfigs), 0},
	{int16(kmsg.IncrementalAlterConfigs), kerr.InvalidConfig.Code},
	{int16(kmsg.ListGroups), 0},
	{int16(kmsg.DescribeGroups), 0},
	{int16(kmsg.DeleteGroups), 0},
	{int16(kmsg.DeleteGroups), kerr.GroupIDNotFound.Code},
	{int16(kmsg.OffsetDelete), 0},
	{int16(kmsg.DescribeCluster), 0},
	{int16(kmsg.CreatePartitions), kerr.InvalidPartitions.Code},
}

// NeverHitReasons explains probes and pairs a sweep of default seeds is known not to
// reach, by name (probe name or Pair.String()). docs/simulation.md keeps the list.
var NeverHitReasons = map[string]string{
	"replica/leader-epochs-rebuilt": "needs a log whose leader-epoch cache was lost while " +
		"its batches survived (a state-store write in doubt dropped at a crash, or a data " +
		"directory older than the cache); TestReplicaRebuildsALostEpochCache drives it",
	"broker/fetch-session-bad-epoch": "needs an incremental fetch with an epoch other " +
		"than the session's next; the simulator's readers keep theirs in step " +
		"(TestFetchSessionEpochAndIDErrors drives it)",
	"broker/fetch-session-no-room": "needs more than max.incremental.fetch.session." +
		"cache.slots (1000) sessions; a run has a few readers " +
		"(TestFetchSessionCacheIsBounded)",
	"broker/fetch-session-evicted": "needs a full session cache and a session idle " +
		"for 120 s; a run lasts seconds (TestFetchSessionCacheIsBounded)",
	"broker/fetch-session-update-over-bound": "needs more than sluice.fetch.session." +
		"cache.max.partitions partitions in sessions (TestFetchSessionCacheIsBounded)",
	"api AllocateProducerIDs": "a broker's request to the controller of a metadata " +
		"quorum; the simulator runs no quorum yet (runtime cluster tests cover it)",
	"api ApiVersions": "answered by net/ (framing and version negotiation), which the " +
		"simulator does not run; net/ and e2e tests cover it",
	"replica/producer-evicted": "needs more than 10 000 producer ids on one partition " +
		"(maxProducersPerPartition); TestProducerTableEvictsTheLongestIdle drives it",
	"replica/append-transactional-refused": "no simulated client is transactional " +
		"(transactions are not implemented); TestReplicaRefusesTransactionalBatches drives it",
	"group/join-max-size": "group.max.size defaults to 1000 members; the simulator runs " +
		"at most 4 per group",
	"group/offsets-expire-empty-group": "offsets.retention.check.interval.ms is 10 min " +
		"and offsets.retention.minutes 7 days, beyond a seed's virtual time " +
		"(core/broker groups_expire_test.go drives expiry)",
	"group/offsets-expire-unsubscribed": "as group/offsets-expire-empty-group; members " +
		"also never change their subscription",
	"broker/offsets-expired": "as group/offsets-expire-empty-group",
	"broker/empty-group-deleted": "the sweep of emptied groups runs with offset expiry, " +
		"every 10 min (offsets.retention.check.interval.ms)",
	"broker/produce-shed-too-many-waiting": "needs more than 10 000 acks=all produces " +
		"waiting (MaxWaitingProduces); a few simulated producers never get there",
	"broker/fetch-answered-at-drain": "Drain is the clean shutdown runtime/ sends on " +
		"SIGTERM; the simulator only crashes and kills nodes",
	"broker/auto-create-over-rate": "the auto-creation rate limit is far above the few " +
		"topics producers auto-create in a seed (core/broker creation_limits_test.go " +
		"drives it)",
	"broker/configs-altered-moved-hwm": "needs log.flush.policy changed from always to " +
		"never on a topic with unsynced data; no client alters log.flush.policy",
	"broker/offsets-orphans-purged": "needs a crash between a topic deletion's commit and " +
		"the durability of its offsets' tombstones, with offsets stored for that topic " +
		"(only the auditor's own group commits to deletable topics): rare",
}

// WriteReport prints the coverage table: every pair answered, every probe hit, and the
// probes, expected pairs and served APIs never reached, with a reason where one is
// recorded.
func (c *Coverage) WriteReport(out io.Writer) {
	fmt.Fprintf(out, "coverage over %d seeds\n", c.Seeds)
	pairs := make([]Pair, 0, len(c.Pairs))
	for p := range c.Pairs {
		pairs = append(pairs, p)
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].API != pairs[j].API {
			return pairs[i].API < pairs[j].API
		}
		return pairs[i].Code < pairs[j].Code
	})
	fmt.Fprintf(out, "(API, error code) pairs answered: %d\n", len(pairs))
	for _, p := range pairs {
		fmt.Fprintf(out, "  %-48s %d\n", p.String(), c.Pairs[p])
	}
	names := probe.Names()
	var hit []string
	for id, name := range names {
		if n := c.Probes.Count(probe.ID(id)); n > 0 {
			hit = append(hit, fmt.Sprintf("  %-48s %d", name, n))
		}
	}
	fmt.Fprintf(out, "probes hit: %d of %d\n", len(hit), len(names))
	fmt.Fprintln(out, strings.Join(hit, "\n"))
	never := c.NeverHit()
	fmt.Fprintf(out, "never hit: %d\n", len(never))
	for _, name := range never {
		reason := NeverHitReasons[name]
		if reason == "" {
			reason = "UNEXPLAINED"
		}
		fmt.Fprintf(out, "  %-48s %s\n", name, reason)
	}
}

// NeverHit returns the names of probes, served APIs and expected pairs never reached.
func (c *Coverage) NeverHit() []string {
	var never []string
	for id, name := range probe.Names() {
		if c.Probes.Count(probe.ID(id)) == 0 {
			never = append(never, name)
		}
	}
	for _, v := range broker.SupportedVersions {
		if !c.answered(v.Key) {
			never = append(never, "api "+kmsg.NameForKey(v.Key))
		}
	}
	for _, p := range ExpectedPairs {
		if c.Pairs[p] == 0 {
			never = append(never, p.String())
		}
	}
	return never
}

func (c *Coverage) answered(key int16) bool {
	for p := range c.Pairs {
		if p.API == key {
			return true
		}
	}
	return false
}
