package fuzz

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/core/replica"
	"github.com/sluicemq/sluice/core/replica/replicatest"
)

// env is a minimal broker.Env: metadata commits and syncs complete when drained.
type env struct {
	replies   map[uint64]int
	proposals []broker.Input // MetaApplied then MetaAnswer, per proposal
	applied   uint64         // last metadata index handed out
	syncs     []broker.SyncDone
	logs      map[core.TopicPartition]*replicatest.MemLog
	timers    []uint64
}

func (e *env) Reply(r broker.Reply)            { e.replies[r.ID]++ }
func (e *env) SetTimer(_ core.Time, id uint64) { e.timers = append(e.timers, id) }
func (e *env) CancelTimer(uint64)              {}
func (e *env) SyncLog(tp core.TopicPartition, inc, tok uint64, l replica.Log) {
	e.syncs = append(e.syncs, broker.SyncDone{TP: tp, Incarnation: inc, Token: tok, Err: l.Sync()})
}
func (e *env) CleanLog(core.TopicPartition, uint64, replica.CleanRequest, replica.Log) {}
func (e *env) OpenLog(tp core.TopicPartition, cfg replica.SegmentConfig) (replica.Log, error) {
	if l, ok := e.logs[tp]; ok {
		l.Reopen(cfg)
		return l, nil
	}
	l := replicatest.NewMemLog(cfg)
	e.logs[tp] = l
	return l, nil
}
func (e *env) RemoveLog(tp core.TopicPartition) error { delete(e.logs, tp); return nil }
func (e *env) ProposeMeta(rec meta.Record, tok uint64) {
	e.applied++
	e.proposals = append(e.proposals, broker.MetaApplied{Index: e.applied, Record: rec},
		broker.MetaAnswer{Token: tok, Outcome: broker.MetaCommitted, Index: e.applied})
}

// SendPeer: the single-node broker sends no inter-broker requests.
func (e *env) SendPeer(broker.PeerRequest) {}

func (e *env) Logger() *zap.Logger { return zap.NewNop() }

// drain completes every outstanding effect, timers included, a bounded number of
// rounds.
func (e *env) drain(b *broker.Broker, now *core.Time) {
	for range 100 {
		if len(e.proposals)+len(e.syncs)+len(e.timers) == 0 {
			return
		}
		ps, ss, ts := e.proposals, e.syncs, e.timers
		e.proposals, e.syncs, e.timers = nil, nil, nil
		for _, p := range ps {
			b.Step(*now, p)
		}
		for _, s := range ss {
			b.Step(*now, s)
		}
		*now += core.Time(60e9) // past any wait a request can ask for
		for _, id := range ts {
			b.Step(*now, broker.TimerFired{ID: id})
		}
	}
}

// FuzzBrokerRequest decodes arbitrary bytes as a request of every served API key and
// version that accepts them, steps the broker with it, and requires exactly one reply
// and no panic. A topic with data exists so produce, fetch and admin paths do work.
func FuzzBrokerRequest(f *testing.F) {
	seedRequests(f)
	f.Fuzz(func(t *testing.T, key, version int16, body []byte) {
		vr, ok := broker.VersionFor(key)
		if !ok || key == int16(kmsg.ApiVersions) {
			return
		}
		if version < vr.Min || version > vr.Max {
			version = vr.Min + (version&0x7fff)%(vr.Max-vr.Min+1)
		}
		req := kmsg.RequestForKey(key)
		req.SetVersion(version)
		if req.ReadFrom(body) != nil {
			return // net/ closes the connection on a body that does not decode
		}
		e := &env{replies: map[uint64]int{}, logs: map[core.TopicPartition]*replicatest.MemLog{},
			applied: 1} // Start carries index 1
		now := core.Time(1_700_000_000e9)
		b := broker.New(broker.DefaultConfig(), e, rand.New(rand.NewSource(1)))
		b.Step(now, broker.Start{Records: []meta.Record{{Kind: meta.KindTopicCreated,
			Topic: "t", Partitions: 2, ReplicationFactor: 1}}})
		prod := produce("t", batch.Build([]batch.KV{{Value: []byte("v")}}, batch.NoProducer, 1))
		b.Step(now, broker.Request{Conn: 1, ID: 1, Msg: prod})
		e.drain(b, &now)
		b.Step(now, broker.Request{Conn: 1, ID: 2, Msg: req})
		e.drain(b, &now)
		if e.replies[2] != 1 {
			t.Fatalf("key %d v%d: %d replies, want exactly 1", key, version, e.replies[2])
		}
	})
}

func produce(topic string, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 1000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// seedRequests adds one well-formed request per served key at its lowest and highest
// version, so the fuzzer starts from inputs that decode (the operator APIs too: their
// handlers read every hosted partition).
func seedRequests(f *testing.F) {
	for _, vr := range append(slices.Clone(broker.SupportedVersions),
		broker.OperatorVersions...) {
		for _, v := range []int16{vr.Min, vr.Max} {
			req := kmsg.RequestForKey(vr.Key)
			if req == nil {
				continue
			}
			req.SetVersion(v)
			if p, ok := req.(*kmsg.ProduceRequest); ok {
				*p = *produce("t", batch.Build([]batch.KV{{Value: []byte("x")}}, batch.NoProducer, 1))
				p.Version = v
			}
			f.Add(vr.Key, v, req.AppendTo(nil))
		}
	}
}
