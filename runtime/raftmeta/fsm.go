package raftmeta

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
)

// outbox is the one way inputs reach the node: deliveries from raft's FSM goroutine,
// the proposer and the leader watcher go through it one at a time, in the order their
// goroutines send them, and stop for good when the incarnation ends.
type outbox struct {
	mu      sync.Mutex
	deliver func(broker.Input) bool
	alive   bool
}

func newOutbox(deliver func(broker.Input) bool) *outbox {
	return &outbox{deliver: deliver, alive: true}
}

// send delivers in; false once the incarnation ended (nothing is delivered then).
func (o *outbox) send(in broker.Input) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.alive && !o.deliver(in) {
		o.alive = false
	}
	return o.alive
}

// end stops every later delivery; a send under way finishes first.
func (o *outbox) end() {
	o.mu.Lock()
	o.alive = false
	o.mu.Unlock()
}

// errNotDelivered is the FSM's response for a committed record whose MetaApplied could
// not be delivered (the incarnation is over): its proposer is answered Unknown.
var errNotDelivered = errors.New("committed, but this incarnation can no longer deliver it")

// fsm is raft's state machine: the metadata image, the dense metadata index (a count
// of the command entries applied, so configuration and no-op entries take no index),
// and how far the node has been told (delivered: Start's last index at boot, then each
// MetaApplied). Records at or below delivered are applied to the image silently: raft
// replays the log after its snapshot at every boot, and Start already held them.
//
// Before any MetaApplied for raft entry i (dense index n) is delivered, the marker
// (i, n) is written durably (mark): the next boot's Start carries the log up to it, so
// it holds every record any incarnation was told about (M2), and only committed ones
// (an entry is applied only once committed).
type fsm struct {
	lg    *zap.Logger
	out   *outbox
	mark  func(raftIndex, dense uint64) error
	fatal func(error)

	mu        sync.Mutex
	image     *meta.Image
	dense     uint64
	delivered uint64
	dead      bool
}

var _ raft.BatchingFSM = (*fsm)(nil)

func newFSM(lg *zap.Logger, delivered uint64) *fsm {
	return &fsm{lg: lg, image: meta.NewImage(), delivered: delivered}
}

// Apply applies one committed entry.
func (f *fsm) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

// ApplyBatch applies committed entries in order. A command's response is its dense
// index once its MetaApplied was delivered (the proposer answers "committed at" it,
// M4), or an error.
func (f *fsm) ApplyBatch(logs []*raft.Log) []any {
	f.mu.Lock()
	defer f.mu.Unlock()
	resps := make([]any, len(logs))
	var (
		fresh    []broker.MetaApplied
		at       []int // fresh[k] answers logs[at[k]]
		lastRaft uint64
	)
	for i, l := range logs {
		if l.Type != raft.LogCommand {
			continue
		}
		var rec meta.Record
		if err := json.Unmarshal(l.Data, &rec); err != nil {
			f.die(fmt.Errorf("raft entry %d is not a metadata record: %w", l.Index, err))
			resps[i] = err
			continue
		}
		f.dense++
		_ = f.image.Apply(rec) // a record that does not apply changes nothing (broker A4)
		resps[i] = f.dense
		if f.dense > f.delivered {
			fresh = append(fresh, broker.MetaApplied{Index: f.dense, Record: rec})
			at = append(at, i)
			lastRaft = l.Index
		}
	}
	if len(fresh) == 0 {
		return resps
	}
	if !f.dead {
		if err := f.mark(lastRaft, fresh[len(fresh)-1].Index); err != nil {
			f.die(fmt.Errorf("write the applied marker at raft index %d: %w", lastRaft, err))
		}
	}
	for k, in := range fresh {
		if f.dead || !f.out.send(in) {
			resps[at[k]] = errNotDelivered
			continue
		}
		f.delivered = in.Index
	}
	return resps
}

// die ends delivery for good (f.mu held); the node must restart.
func (f *fsm) die(err error) {
	if f.dead {
		return
	}
	f.dead = true
	f.out.end()
	f.fatal(err)
}

// Snapshot captures the image as records; Persist writes them.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &fsmSnapshot{snap: snapshotFile{Version: snapshotVersion, Index: f.dense,
		Records: f.image.Snapshot()}}, nil
}

// Restore replaces the image by a snapshot's: at boot (inside raft.NewRaft) the one
// Start was built from, later one a leader installed because this node lagged behind
// its compacted log. The latter skips records the node was never told about, which the
// port cannot express: the incarnation ends (fatal) and the next Start holds the
// snapshot.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer func() { _ = rc.Close() }()
	s, err := decodeSnapshot(rc)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.image = imageOf(s.Records)
	f.dense = s.Index
	if s.Index > f.delivered {
		f.die(fmt.Errorf("a metadata snapshot at index %d was installed past index %d, the "+
			"last this incarnation delivered; restart the node to load it", s.Index,
			f.delivered))
	}
	return nil
}

func imageOf(recs []meta.Record) *meta.Image {
	im := meta.NewImage()
	for _, r := range recs {
		_ = im.Apply(r)
	}
	return im
}

// snapshotFile is a snapshot's content: the image as records (meta.Image.Snapshot) at
// dense index Index. JSON, like the records in the log; the field names are part of
// the on-disk format.
type snapshotFile struct {
	Version int           `json:"version"`
	Index   uint64        `json:"index"`
	Records []meta.Record `json:"records"`
}

const snapshotVersion = 1

func decodeSnapshot(r io.Reader) (snapshotFile, error) {
	var s snapshotFile
	if err := json.NewDecoder(r).Decode(&s); err != nil {
		return s, fmt.Errorf("decode metadata snapshot: %w", err)
	}
	if s.Version != snapshotVersion {
		return s, fmt.Errorf("metadata snapshot version %d, want %d", s.Version,
			snapshotVersion)
	}
	return s, nil
}

type fsmSnapshot struct{ snap snapshotFile }

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode(s.snap); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}

// brokerAlive says whether the applied image holds node id's broker registration
// unfenced (or shutting down): its process was alive within its session.
func (f *fsm) brokerAlive(id int32) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.image.Broker(id)
	return ok && b.State != meta.BrokerFenced
}
