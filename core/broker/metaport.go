package broker

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
)

// metaPortState is where the broker stands on the metadata port (env.go, M1–M7).
type metaPortState struct {
	applied uint64 // index of the last record applied (M2)
	leader  int32  // the quorum leader last announced, -1 if none (M7)
	epoch   uint64 // its epoch
	// notApplied holds why recently committed records did not apply to the image, by
	// index, until their proposer's answer (pruned past notAppliedWindow).
	notApplied map[uint64]error
}

// notAppliedWindow bounds how long the broker remembers a committed record that did
// not apply: its answer comes soon after its MetaApplied (M4), or never here (another
// node proposed it).
const notAppliedWindow = 1024

// errMetaUnknown and errMetaNotLeader are what a waiter hears for those answers.
var (
	errMetaUnknown   = fmt.Errorf("the metadata change's outcome is unknown (it may still commit)")
	errMetaNotLeader = fmt.Errorf("this node does not lead the metadata quorum")
)

// metaWaiter is what waits on one proposal: record i of an admin operation, or (op
// nil) the producer-id block (init_producer_id.go).
type metaWaiter struct {
	op    adminOp
	i     int
	since core.Time
	kind  meta.Kind
	topic string
}

// metaApplied applies one committed record: every node receives every record, in
// index order, whoever proposed it (M2).
func (b *Broker) metaApplied(in MetaApplied) {
	core.Invariant(in.Index == b.metaPort.applied+1, "B8",
		"MetaApplied index %d after %d: the metadata log must be gapless", in.Index,
		b.metaPort.applied)
	b.metaPort.applied = in.Index
	if err := b.apply(in.Record); err != nil {
		b.hit(pMetaNotApplied)
		if b.metaPort.notApplied == nil {
			b.metaPort.notApplied = map[uint64]error{}
		}
		b.metaPort.notApplied[in.Index] = err
		for idx := range b.metaPort.notApplied {
			if idx+notAppliedWindow < in.Index {
				delete(b.metaPort.notApplied, idx)
			}
		}
	}
}

// metaAnswer resolves the request waiting on a proposal.
func (b *Broker) metaAnswer(in MetaAnswer) {
	var err error
	switch in.Outcome {
	case MetaCommitted:
		core.Invariant(in.Index != 0 && in.Index <= b.metaPort.applied, "B9",
			"proposal %d answered committed at %d before it was applied (applied %d)",
			in.Token, in.Index, b.metaPort.applied)
		if e, ok := b.metaPort.notApplied[in.Index]; ok {
			// Committed, but checked against an image that a record committed before it
			// changed (a proposal answered "unknown" that committed late): it changed
			// nothing. A retry is checked against the image as it is now.
			delete(b.metaPort.notApplied, in.Index)
			err = fmt.Errorf("the metadata change conflicted with an earlier one: %w", e)
		}
	case MetaNotLeader:
		b.hit(pMetaFailed)
		err = fmt.Errorf("%w (leader hint %d)", errMetaNotLeader, in.Leader)
	case MetaRejected:
		b.hit(pMetaFailed)
		err = in.Err
		if err == nil {
			err = fmt.Errorf("the metadata log rejected the change")
		}
	case MetaUnknown:
		b.hit(pMetaUnknown)
		err = errMetaUnknown
		if in.Err != nil {
			err = fmt.Errorf("%w: %w", errMetaUnknown, in.Err)
		}
	default:
		core.Invariant(false, "B9", "proposal %d: unknown outcome %d", in.Token, in.Outcome)
		err = fmt.Errorf("metadata answer with outcome %d", in.Outcome)
	}
	b.adminController.proposalAnswered(in, err)
}

// metaLeaderChanged notes the metadata quorum's leader (M7). A single node leads from
// the start; nothing in the broker depends on it yet (the controller will).
func (b *Broker) metaLeaderChanged(in MetaLeaderChanged) {
	core.Invariant(in.Epoch > b.metaPort.epoch, "B10",
		"metadata leader epoch %d after %d", in.Epoch, b.metaPort.epoch)
	b.metaPort.leader, b.metaPort.epoch = in.Leader, in.Epoch
	b.leader = in.Leader
	if in.Leader >= 0 {
		b.replStats.QuorumLeaderChanges++
	}
	b.lg.Debug("metadata leader", zap.Int32("leader", in.Leader), zap.Uint64("epoch", in.Epoch))
}

// MetaIndex returns the index of the last metadata record the broker applied.
func (b *Broker) MetaIndex() uint64 { return b.metaPort.applied }
