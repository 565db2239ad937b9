package controller

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sluicemq/sluice/core/meta"
)

// world is a property test's cluster: nodes that register, beat, die, restart and shut
// down around one controller whose metadata log commits, loses, delays or refuses its
// proposals.
type world struct {
	*harness
	t       *rapid.T
	cfg     Config
	alive   map[int32]bool
	inc     map[int32]byte
	epochs  map[int32]int64
	asked   []uint64
	leading bool
}

const nodes = 5

func newWorld(t *rapid.T) *world {
	cfg := testConfig()
	cfg.UncleanLeaderElection = rapid.Bool().Draw(t, "unclean")
	cfg.MaxInFlight = rapid.IntRange(1, 16).Draw(t, "inflight")
	w := &world{t: t, cfg: cfg, alive: map[int32]bool{}, inc: map[int32]byte{},
		epochs: map[int32]int64{}, leading: true}
	w.harness = newHarness(t, cfg, rapid.Int64().Draw(t, "seed"))
	w.checkProposals()
	w.settle()
	for n := range int32(rapid.IntRange(1, nodes).Draw(t, "initial")) {
		w.start(n + 1)
	}
	w.beatAlive()
	w.settle()
	return w
}

// start starts a new process of node n.
func (w *world) start(n int32) {
	w.alive[n] = true
	w.inc[n]++
	w.register(n)
}

// checkProposals wraps the env so every proposal is checked against the image it was
// decided on (the harness's image is the controller's: both applied the same log).
func (w *world) checkProposals() {
	w.env.onPropose = func(rec meta.Record) {
		switch rec.Kind {
		case meta.KindTopicCreated:
			leaders := map[int32]int{}
			for _, s := range rec.PartitionStates {
				leaders[s.Leader]++
				for _, r := range s.Replicas {
					b, ok := w.image.Broker(r)
					require.True(w.t, ok && b.State == meta.BrokerUnfenced,
						"placed on broker %d, not unfenced", r)
				}
			}
			live := len(EligibleBrokers(w.image))
			lo, hi := int(rec.Partitions)/live, (int(rec.Partitions)+live-1)/live
			for _, n := range leaders {
				require.True(w.t, n >= lo && n <= hi, "leaders %v over %d brokers", leaders, live)
			}
		case meta.KindPartitionsAdded:
			t := w.image.Topic(rec.Topic)
			require.NotNil(w.t, t)
			require.Len(w.t, rec.PartitionStates, int(rec.Partitions-t.Partitions))
			for _, s := range rec.PartitionStates {
				require.Len(w.t, s.Replicas, len(t.States[0].Replicas), "the topic's factor")
				require.NoError(w.t, s.Check())
				for _, r := range s.Replicas {
					b, ok := w.image.Broker(r)
					require.True(w.t, ok && b.State == meta.BrokerUnfenced,
						"new partition placed on broker %d, not unfenced", r)
				}
			}
		case meta.KindPartitionChange:
			if rec.Unclean {
				require.True(w.t, w.cfg.UncleanLeaderElection, "unclean election disabled")
			}
		}
	}
	w.onCommit = w.checkChange
}

// checkChange checks an applied partition change against the state before it.
func (w *world) checkChange(rec meta.Record, before meta.PartitionState) {
	after := w.state(rec.Topic, rec.Partition)
	if after.Leader != before.Leader {
		require.Equal(w.t, before.LeaderEpoch+1, after.LeaderEpoch, "leader epoch +1")
		if after.Leader != meta.NoLeader && !rec.Unclean {
			require.Contains(w.t, before.ISR, after.Leader, "clean: from the ISR")
		}
	} else {
		require.Equal(w.t, before.LeaderEpoch, after.LeaderEpoch)
	}
	require.Equal(w.t, before.PartitionEpoch+1, after.PartitionEpoch)
	require.NotEmpty(w.t, after.ISR)
	if after.Leader != meta.NoLeader {
		require.Contains(w.t, after.ISR, after.Leader, "the leader is in the ISR")
	}
}

func (w *world) node() int32 { return rapid.Int32Range(1, nodes).Draw(w.t, "node") }

func (w *world) ask(m Message) uint64 {
	id := w.harness.ask(m)
	w.asked = append(w.asked, id)
	return id
}

func (w *world) register(n int32) {
	id := w.ask(RegisterBroker{NodeID: n, Incarnation: [16]byte{w.inc[n]}, ClusterID: "c",
		Rack: []string{"", "x", "y"}[n%3]})
	w.settleSome()
	if r, ok := w.answer(id).(RegisterBrokerResponse); ok && r.Err == 0 {
		w.epochs[n] = r.BrokerEpoch
	}
}

// settleSome commits a drawn number of proposals, in any of the log's ways.
func (w *world) settleSome() {
	for range rapid.IntRange(0, 6).Draw(w.t, "commits") {
		switch rapid.IntRange(0, 29).Draw(w.t, "how") {
		case 0, 1, 2:
			w.unknownOne(rapid.Bool().Draw(w.t, "late"))
		case 3:
			if w.leading {
				w.notLeaderOne()
				w.leading = false
			}
		default:
			w.commitOne()
		}
	}
}

func (w *world) beatAlive() {
	for n := int32(1); n <= nodes; n++ {
		if w.alive[n] && w.epochs[n] != 0 {
			w.ask(Heartbeat{NodeID: n, BrokerEpoch: w.epochs[n],
				MetadataIndex: uint64(len(w.log))})
		}
	}
}

func (w *world) step() {
	switch rapid.IntRange(0, 13).Draw(w.t, "action") {
	case 0: // a node starts (a new process), or one that failed to register retries
		if n := w.node(); !w.alive[n] {
			w.start(n)
		} else if w.epochs[n] == 0 {
			w.register(n)
		}
	case 1: // a node dies
		w.alive[w.node()] = false
	case 2:
		w.advance(rapid.Int64Range(0, 3000).Draw(w.t, "ms"))
		w.beatAlive()
	case 3:
		w.ask(CreateTopic{Name: rapid.SampledFrom([]string{"a", "b", "c"}).Draw(w.t, "t"),
			Partitions:        rapid.Int32Range(1, 6).Draw(w.t, "parts"),
			ReplicationFactor: int16(rapid.IntRange(1, 3).Draw(w.t, "rf"))})
	case 4, 10, 11:
		w.alterSome()
	case 5:
		if n := w.node(); w.alive[n] {
			w.ask(ControlledShutdown{NodeID: n, BrokerEpoch: w.epochs[n]})
		}
	case 6:
		w.ask(ElectLeaders{})
	case 12:
		if names := w.image.TopicNames(); len(names) > 0 {
			name := rapid.SampledFrom(names).Draw(w.t, "grow")
			w.ask(CreatePartitions{Topic: name, Count: w.image.Topic(name).Partitions +
				rapid.Int32Range(0, 3).Draw(w.t, "more")})
		}
	case 13: // an operator unregisters a node (refused unless it is dead and empty)
		w.ask(UnregisterBroker{NodeID: w.node()})
	case 7:
		if !w.leading {
			w.lead()
			w.leading = true
		}
	default:
		w.settleSome()
	}
}

// alterSome has a partition's leader ask for a drawn ISR (sometimes with old epochs).
func (w *world) alterSome() {
	names := w.image.TopicNames()
	if len(names) == 0 {
		return
	}
	name := rapid.SampledFrom(names).Draw(w.t, "topic")
	t := w.image.Topic(name)
	p := rapid.Int32Range(0, t.Partitions-1).Draw(w.t, "p")
	s := w.state(name, p)
	if s.Leader == meta.NoLeader || !w.alive[s.Leader] {
		return
	}
	isr := []int32{s.Leader}
	for _, r := range s.Replicas {
		if r != s.Leader && rapid.IntRange(0, 2).Draw(w.t, "in") == 0 {
			isr = append(isr, r)
		}
	}
	stale := rapid.IntRange(0, 4).Draw(w.t, "stale") == 0
	w.ask(AlterPartition{NodeID: s.Leader, BrokerEpoch: w.epochs[s.Leader], Topic: name,
		Partition: p, LeaderEpoch: s.LeaderEpoch,
		PartitionEpoch: s.PartitionEpoch - int32(boolInt(stale)), NewISR: isr})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// quiesce heals the log (it leads and commits everything) and lets the live nodes beat
// past a session, so the controller finishes what it has to do.
func (w *world) quiesce() {
	if !w.leading {
		w.lead()
		w.leading = true
	}
	for range 8 {
		w.settle()
		w.advance(2000)
		w.beatAlive()
		w.settle()
	}
}

// checkSettled checks the cluster after quiesce: dead nodes fenced, every partition led
// by an eligible broker when one of its ISR can (or, unclean, any replica can), ISRs
// without ineligible brokers unless none is eligible, every request answered once.
func (w *world) checkSettled() {
	eligible := Eligible(w.image)
	for _, b := range w.image.Brokers() {
		if !w.alive[b.ID] {
			require.NotEqual(w.t, meta.BrokerUnfenced, b.State, "dead broker %d", b.ID)
		}
	}
	for _, name := range w.image.TopicNames() {
		for p, s := range w.image.Topic(name).States {
			_, _, changed := Repair(s, eligible, w.cfg.UncleanLeaderElection)
			require.False(w.t, changed, "%s-%d not repaired: %+v", name, p, s)
			if s.Leader == meta.NoLeader {
				require.False(w.t, slices.ContainsFunc(s.ISR, eligible))
			}
		}
	}
	for _, id := range w.asked {
		require.Len(w.t, w.env.answers[id], 1, "request %d", id)
	}
	require.Empty(w.t, w.c.Pending())
}

// TestControllerProperty drives the controller through random registrations,
// heartbeats, deaths, restarts, time, topic creations and growths, ISR changes, shutdowns,
// elections and metadata-log outcomes (committed, unknown then committed or lost, not
// leader), checking every proposal and every committed change as it happens, and the
// cluster's shape once things quiet down.
func TestControllerProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := newWorld(t)
		for range rapid.IntRange(1, 80).Draw(t, "steps") {
			w.step()
		}
		w.quiesce()
		w.checkSettled()
	})
}
