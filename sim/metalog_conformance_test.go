package sim

import (
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/internal/metatest"
)

// TestMetaLogConformance runs the metadata port's conformance suite against the
// simulator's model (metalog.go) in a bare World: commit latency, MetaErrors
// (Rejected), unknown outcomes that commit or not, and crashes that commit a prefix of
// the pending proposals, all drawn by rapid.
func TestMetaLogConformance(t *testing.T) {
	metatest.Run(t, func(rt *rapid.T) metatest.Adapter {
		cfg := Config{Seed: rapid.Uint64().Draw(rt, "seed"),
			Timing: Timing{MetaFloorUs: 10, MetaMeanUs: 200},
			Faults: Faults{
				MetaErrorChance:   rapid.SampledFrom([]float64{0, 0.3, 1}).Draw(rt, "errs"),
				MetaUnknownChance: rapid.SampledFrom([]float64{0, 0.2, 0.6}).Draw(rt, "unk"),
			}}
		w := &World{cfg: cfg, tr: newTracer(), stats: Stats{Faults: map[string]int{}}}
		w.q.limit = maxQueuedEvents
		w.meta = newMetaLog(w)
		a := &simMetaAdapter{t: rt, w: w, spell: cfg.Faults.MetaErrorChance > 0}
		w.meta.join(a)
		return a
	})
}

// simMetaAdapter is one node of the model, as the suite drives it.
type simMetaAdapter struct {
	t       *rapid.T
	w       *World
	gen     uint64
	up      bool
	spell   bool
	deliver func(broker.Input)
}

func (a *simMetaAdapter) metaID() int32   { return 0 }
func (a *simMetaAdapter) metaGen() uint64 { return a.gen }
func (a *simMetaAdapter) metaUp() bool    { return a.up }
func (a *simMetaAdapter) metaErrSpell() bool {
	return a.spell
}
func (a *simMetaAdapter) metaInput(in broker.Input) { a.deliver(in) }

func (a *simMetaAdapter) Boot(deliver func(broker.Input)) broker.Start {
	a.gen++
	a.up, a.deliver = true, deliver
	st, err := a.w.meta.start(a)
	if err != nil {
		a.t.Fatalf("metadata log unreadable: %v", err)
	}
	deliver(broker.MetaLeaderChanged{Leader: 1, Epoch: 1})
	return st
}

func (a *simMetaAdapter) Propose(rec meta.Record, token uint64) {
	a.w.meta.propose(a, rec, token)
}

// Settle runs the model's events until done or none are left.
func (a *simMetaAdapter) Settle(done func() bool) {
	for !done() {
		e, ok := a.w.q.pop()
		if !ok {
			break
		}
		a.w.now = e.at
		e.fn()
	}
	a.checkWorld()
}

func (a *simMetaAdapter) Crash() {
	a.up = false
	a.w.meta.nodeStopped(a)
	a.gen++
	a.checkWorld()
}

func (a *simMetaAdapter) Snapshot(index uint64, image []meta.Record) (bool, error) {
	return true, a.w.meta.log.Snapshot(index, image)
}

func (a *simMetaAdapter) Close() { a.checkWorld() }

// checkWorld fails on what the model itself flagged (a rejected record committed).
func (a *simMetaAdapter) checkWorld() {
	if len(a.w.failures) > 0 {
		var s []string
		for _, f := range a.w.failures {
			s = append(s, f.String())
		}
		a.t.Fatalf("the model failed: %s", strings.Join(s, "; "))
	}
}
