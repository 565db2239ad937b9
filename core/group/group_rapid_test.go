package group

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"pgregory.net/rapid"

	"github.com/sluicemq/sluice/core"
)

// client is what one simulated consumer knows about itself.
type client struct {
	id        string
	instance  *string // static member
	gen       int32
	protocols []Protocol
}

// history checks what members were told against the group's invariants.
type history struct {
	t           *rapid.T
	g           *Group
	outstanding int
	leaders     map[int32]string // generation → leader every member was told
	protocols   map[int32]string
	lastGen     map[string]int32 // member id → generation of its last successful join
	maxGen      int32
}

func (h *history) joinCallback(c *client) func(JoinResult) {
	h.outstanding++
	called := false
	return func(r JoinResult) {
		if called {
			h.t.Fatalf("join answered twice")
		}
		called = true
		h.outstanding--
		if r.Err == 0 || r.Err == kerr.MemberIDRequired.Code {
			c.id = r.MemberID
		}
		if r.Err != 0 {
			return
		}
		c.gen = r.Generation
		h.lastGen[r.MemberID] = r.Generation
		if l, ok := h.leaders[r.Generation]; ok && l != r.LeaderID {
			h.t.Fatalf("generation %d has leaders %s and %s", r.Generation, l, r.LeaderID)
		}
		h.leaders[r.Generation] = r.LeaderID
		if p, ok := h.protocols[r.Generation]; ok && p != r.Protocol {
			h.t.Fatalf("generation %d has protocols %s and %s", r.Generation, p, r.Protocol)
		}
		h.protocols[r.Generation] = r.Protocol
		if (r.LeaderID == r.MemberID) != (len(r.Members) > 0) {
			h.t.Fatalf("member list given to %s, leader %s", r.MemberID, r.LeaderID)
		}
	}
}

func (h *history) syncCallback() func(SyncResult) {
	h.outstanding++
	called := false
	return func(SyncResult) {
		if called {
			h.t.Fatalf("sync answered twice")
		}
		called = true
		h.outstanding--
	}
}

// check asserts the invariants that hold between any two operations.
func (h *history) check() {
	g := h.g
	if g.generation < h.maxGen {
		h.t.Fatalf("generation went back from %d to %d", h.maxGen, g.generation)
	}
	h.maxGen = g.generation
	switch g.state {
	case Empty:
		if len(g.members) > 0 {
			h.t.Fatalf("Empty group with %d members", len(g.members))
		}
	case CompletingRebalance, Stable:
		if g.members[g.leader] == nil {
			h.t.Fatalf("%v group without its leader %q", g.state, g.leader)
		}
		for id := range g.members {
			if h.lastGen[id] != g.generation {
				h.t.Fatalf("%v member %s last joined generation %d, group is at %d",
					g.state, id, h.lastGen[id], g.generation)
			}
		}
	}
	if g.state == Stable {
		// G5: a generation is Stable (its assignment told) only once its record is
		// durable, so a restart can never bring back an older generation.
		v, err := DecodeGroupValue(g.durable)
		if err != nil || v.Generation != g.generation {
			h.t.Fatalf("Stable at generation %d, durable record %v (%v)", g.generation,
				v.Generation, err)
		}
		for _, m := range g.members {
			if m.joinWaiter != nil || m.syncWaiter != nil {
				h.t.Fatalf("Stable group with a parked request of %s", m.id)
			}
		}
	}
}

// checkProgress asserts that a Tick at now left nothing due at now: a timer armed at
// NextDeadline can never spin.
func (h *history) checkProgress(now core.Time) {
	if at, ok := h.g.NextDeadline(); ok && at <= now {
		h.t.Fatalf("after Tick(%d) the next deadline is %d (state %v)", now, at, h.g.state)
	}
}

func TestGroupPropertyRandomMembership(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := DefaultConfig()
		cfg.InitialRebalanceDelayMs = rapid.SampledFrom([]int32{0, 3000}).Draw(t, "delay")
		c := NewCoordinator(cfg, &testRand{s: rapid.Uint64().Draw(t, "seed")})
		g := c.GetOrCreate("g")
		h := &history{t: t, g: g, leaders: map[int32]string{}, protocols: map[int32]string{},
			lastGen: map[string]int32{}}
		now := core.Time(1e12)
		clients := make([]*client, 4)
		for i := range clients {
			clients[i] = &client{protocols: consumerProto("range", "roundrobin")}
		}
		clients[3].protocols = consumerProto("roundrobin", "range")
		inst := "static-2"
		clients[2].instance = &inst
		var writes []MetadataWrite // taken, not yet reported
		steps := rapid.IntRange(1, 80).Draw(t, "steps")
		for s := 0; s < steps; s++ {
			cl := clients[rapid.IntRange(0, len(clients)-1).Draw(t, "client")]
			switch rapid.IntRange(0, 8).Draw(t, "op") {
			case 0, 1:
				req := JoinRequest{MemberID: cl.id, InstanceID: cl.instance, ClientID: "c",
					ProtocolType: "consumer",
					Protocols:    cl.protocols, SessionMs: 10_000,
					RebalanceMs:          rapid.SampledFrom([]int32{10_000, 20_000}).Draw(t, "rb"),
					RequireKnownMemberID: rapid.Bool().Draw(t, "v4")}
				g.Join(now, req, h.joinCallback(cl))
			case 2:
				var as []Assignment
				for id := range g.members {
					as = append(as, Assignment{MemberID: id, Data: []byte(id)})
				}
				g.Sync(now, SyncRequest{MemberID: cl.id, InstanceID: cl.instance,
					Generation: cl.gen, Assignments: as}, h.syncCallback())
			case 3:
				g.Heartbeat(now, cl.id, cl.instance, cl.gen)
			case 4:
				g.Leave(now, cl.id, cl.instance)
			case 5:
				g.CheckCommit(now, cl.gen, cl.id, cl.instance)
			case 7:
				cl.id, cl.gen = "", 0 // the client restarts and forgets its id
			case 6:
				now = now.AddMillis(int64(rapid.IntRange(0, 15_000).Draw(t, "ms")))
				g.Tick(now)
				h.checkProgress(now)
			case 8:
				// The broker's metadata writes: taken, then durable or failed in order.
				if w, ok := g.TakeMetadataWrite(now); ok {
					writes = append(writes, w)
				} else if len(writes) > 0 {
					code := rapid.SampledFrom([]int16{0, 0, 15}).Draw(t, "write outcome")
					g.MetadataWritten(now, writes[0], code)
					writes = writes[1:]
				}
			}
			h.check()
		}
		// Liveness: with nobody acting, time alone answers every parked request.
		for i := 0; i < 50 && h.outstanding > 0; i++ {
			at, ok := g.NextDeadline()
			if !ok {
				break
			}
			now = max(now, at)
			g.Tick(now)
			h.check()
			h.checkProgress(now)
		}
		if h.outstanding != 0 {
			t.Fatalf("%d requests never answered (state %v)", h.outstanding, g.state)
		}
	})
}

func TestGroupMemberIDsAreDeterministic(t *testing.T) {
	a := NewCoordinator(DefaultConfig(), &testRand{s: 7}).newMemberID("rdkafka")
	b := NewCoordinator(DefaultConfig(), &testRand{s: 7}).newMemberID("rdkafka")
	if a != b || len(a) != len("rdkafka-")+36 {
		t.Fatal(fmt.Sprintf("ids %q and %q", a, b))
	}
}
