package broker

// Pending: what the broker is waiting for, as data.
//
// Every piece of work the broker parks is a typed record (timers.go, admin_queue.go,
// offset_writes.go, produce.go, fetch.go, init_producer_id.go, open_queue.go), so
// Pending can list it: a test asserts on it, and the simulator prints it in a failed
// seed's artifacts. The list is sorted and holds no map-order dependence, so two runs
// of one seed print the same text.

import (
	"fmt"
	"sort"
	"strings"

	"github.com/sluicemq/sluice/core"
)

// PendingKind names a kind of pending work.
type PendingKind string

// The kinds Pending reports.
const (
	PendingProduce     PendingKind = "produce"      // acks=all, waiting for high-water marks
	PendingFetch       PendingKind = "fetch"        // long poll, waiting for bytes
	PendingAdmin       PendingKind = "admin"        // a metadata-changing operation
	PendingProposal    PendingKind = "proposal"     // a metadata record awaiting its answer
	PendingProducerID  PendingKind = "producer-id"  // InitProducerId waiting for a block
	PendingOffsetWrite PendingKind = "offset-write" // a write to __consumer_offsets
	PendingOpen        PendingKind = "open"         // new partitions' logs still to open
	PendingSync        PendingKind = "fsync"        // an fsync in flight
	PendingTimer       PendingKind = "timer"        // a group deadline or an open chunk
	PendingGroup       PendingKind = "group"        // JoinGroup/SyncGroup held by its group
	// PendingController is a request to the cluster's controller, or a creation
	// forwarded to its node, awaiting the answer (controller_port.go).
	PendingController PendingKind = "controller"
	// PendingFollower is a follower link's request to its leader, or its backoff.
	PendingFollower  PendingKind = "follower-fetch"
	PendingISRChange PendingKind = "isr-change" // an AlterPartition this leader asked for
	// PendingDelete is a DeleteRecords waiting for its ISR followers' log starts.
	PendingDelete PendingKind = "delete-records"
)

// PendingOp is one piece of work the broker waits on.
type PendingOp struct {
	Kind PendingKind
	// What names the work (the API, the operation, the owner of a write).
	What string
	// Waits says what it waits for: tokens, timer ids, offsets, logs to open.
	Waits string
	// Since is when it started waiting; AgeMs is how long ago that was when Pending ran.
	Since core.Time
	AgeMs int64
	// Conn and ID name the client request it answers; HasRequest is false for the
	// broker's own work.
	Conn, ID   uint64
	HasRequest bool
}

func (p PendingOp) String() string {
	req := "broker"
	if p.HasRequest {
		req = fmt.Sprintf("conn=%d req=%d", p.Conn, p.ID)
	}
	return fmt.Sprintf("%-12s age=%dms %s %s: %s", p.Kind, p.AgeMs, req, p.What, p.Waits)
}

// Pending lists the work the broker is waiting for, sorted by kind, then start time,
// then request, then description. The periodic passes (log retention, offset expiry)
// are always armed and not listed. It is the concatenation of each part's list.
func (b *Broker) Pending() []PendingOp {
	var out []PendingOp
	out = b.replicaManager.pending(out)
	out = b.groupCoordinator.pending(out, b.replicaManager.syncToken)
	out = b.adminController.pending(out, b.replicaManager.logsToOpen)
	sort.SliceStable(out, func(i, j int) bool { return pendingLess(out[i], out[j]) })
	for i := range out {
		out[i].AgeMs = (b.now - out[i].Since).Millis()
	}
	return out
}

// pending lists the replica manager's parked produces and fetches, the open queue and
// the fsyncs in flight.
func (rm *replicaManager) pending(out []PendingOp) []PendingOp {
	for _, id := range rm.timers.ids() {
		t := rm.timers[id]
		timer := rm.describeTimer(t, id)
		switch t.kind {
		case timerProduceTimeout:
			p := t.produce
			out = append(out, PendingOp{Kind: PendingProduce, What: "Produce acks=all",
				Waits: rm.produceWaits(p) + "; " + timer, Since: t.set, Conn: p.req.Conn,
				ID: p.req.ID, HasRequest: true})
		case timerDeleteRecords:
			d := t.deletion
			out = append(out, PendingOp{Kind: PendingDelete, What: "DeleteRecords",
				Waits: d.describe() + "; " + timer, Since: t.set, Conn: d.req.Conn,
				ID: d.req.ID, HasRequest: true})
		case timerFetchWait:
			w := t.fetch
			out = append(out, PendingOp{Kind: PendingFetch, What: "Fetch",
				Waits: fmt.Sprintf("min_bytes=%d on %v; %s", w.m.MinBytes, w.tps, timer),
				Since: t.set, Conn: w.req.Conn, ID: w.req.ID, HasRequest: true})
		case timerOpenChunk:
			out = append(out, PendingOp{Kind: PendingTimer, What: "open next chunk",
				Waits: timer, Since: t.set})
		case timerGroup, timerOffsetExpiry, timerRetention, timerFetcherBackoff, timerISRCheck,
			timerAlterISR, timerCleaner, timerQuotaHold:
			// not ours, periodic, or listed below (follower links, ISR changes)
		default:
			core.Invariant(false, "B11", "timer %d of unknown kind %d", id, t.kind)
		}
	}
	if n := len(rm.opens.queued); n > 0 {
		out = append(out, PendingOp{Kind: PendingOpen, What: "partition logs",
			Waits: fmt.Sprintf("%d logs to open, %d operations waiting", n,
				len(rm.opens.waiters)), Since: rm.now})
	}
	out = rm.fetcherPending(out)
	for _, tp := range sortedKeys(rm.isr.alters) {
		a := rm.isr.alters[tp]
		out = append(out, PendingOp{Kind: PendingISRChange, What: "AlterPartition " +
			tp.String(), Waits: fmt.Sprintf("%v isr=%v partition_epoch=%d peer=%d timer=%d",
			a.phase, a.newISR, a.partitionEpoch, a.peer, a.timer), Since: a.since})
	}
	for _, tp := range sortedKeys(rm.syncs) {
		s := rm.syncs[tp]
		out = append(out, PendingOp{Kind: PendingSync, What: tp.String(),
			Waits: fmt.Sprintf("SyncDone token=%d", s.token), Since: s.since})
	}
	return out
}

// syncToken is the token of the fsync in flight on tp, if any.
func (rm *replicaManager) syncToken(tp core.TopicPartition) (uint64, bool) {
	s, ok := rm.syncs[tp]
	return s.token, ok
}

func pendingLess(a, b PendingOp) bool {
	switch {
	case a.Kind != b.Kind:
		return a.Kind < b.Kind
	case a.Since != b.Since:
		return a.Since < b.Since
	case a.Conn != b.Conn:
		return a.Conn < b.Conn
	case a.ID != b.ID:
		return a.ID < b.ID
	case a.What != b.What:
		return a.What < b.What
	}
	return a.Waits < b.Waits
}

// ids returns the live timers' ids, ascending.
func (tbl timerTable) ids() []uint64 {
	ids := make([]uint64, 0, len(tbl))
	for id := range tbl {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// describeTimer says when timer id is due, for Pending.
func (n *node) describeTimer(t brokerTimer, id uint64) string {
	return fmt.Sprintf("timer=%d due in %dms", id, (t.at - n.now).Millis())
}

// pending lists the group coordinator's group timers, offset writes and parked
// JoinGroup/SyncGroup requests; syncToken names the fsync an appended write waits for.
func (gc *groupCoordinator) pending(out []PendingOp,
	syncToken func(core.TopicPartition) (uint64, bool)) []PendingOp {
	for _, id := range gc.timers.ids() {
		if t := gc.timers[id]; t.kind == timerGroup {
			out = append(out, PendingOp{Kind: PendingTimer, What: "group " + t.group,
				Waits: gc.describeTimer(t, id), Since: t.set})
		}
	}
	out = gc.pendingOffsetWrites(out, syncToken)
	for _, p := range gc.groups.parked {
		out = append(out, PendingOp{Kind: PendingGroup, What: p.api,
			Waits: fmt.Sprintf("group %q member %q: the rebalance", p.group, p.member),
			Since: p.since, Conn: p.req.Conn, ID: p.req.ID, HasRequest: true})
	}
	return out
}

// produceWaits describes the partitions a parked produce still waits on.
func (rm *replicaManager) produceWaits(p *pendingProduce) string {
	var parts []string
	for _, tp := range sortedKeys(rm.produces.byTP) {
		for _, w := range rm.produces.byTP[tp] {
			if w.p != p {
				continue
			}
			s := fmt.Sprintf("%s hwm>=%d", tp, w.offset)
			if sy, ok := rm.syncs[tp]; ok {
				s += fmt.Sprintf(" (sync token=%d)", sy.token)
			}
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ", ")
}

// pending lists the controller side's admin operations, proposals and InitProducerId
// requests; logsToOpen counts the logs an opening operation waits for.
func (ctl *adminController) pending(out []PendingOp, logsToOpen func() int) []PendingOp {
	out = ctl.pendingAdmin(out, logsToOpen)
	out = ctl.pendingProposals(out)
	out = ctl.pendingController(out)
	for _, w := range ctl.pidWaiters {
		out = append(out, PendingOp{Kind: PendingProducerID, What: "InitProducerId",
			Waits: "a producer-id block to commit", Since: w.since, Conn: w.req.Conn,
			ID: w.req.ID, HasRequest: true})
	}
	return out
}

// pendingAdmin lists the running admin operation and the queued ones.
func (ctl *adminController) pendingAdmin(out []PendingOp, logsToOpen func() int) []PendingOp {
	ops := append([]adminOp(nil), ctl.admin.queue...)
	if ctl.admin.running != nil {
		ops = append([]adminOp{ctl.admin.running}, ops...)
	}
	for i, op := range ops {
		a := op.base()
		waits := a.phase.String()
		switch a.phase {
		case adminProposing:
			waits += fmt.Sprintf(": %d of %d answers, tokens %v", a.left, len(a.recs),
				ctl.tokensOf(op))
		case adminOpening:
			waits += fmt.Sprintf(": %d logs to open", logsToOpen())
		case adminOffsets:
			waits += fmt.Sprintf(": %d offset writes", a.left)
		case adminForwarding:
			if f, ok := op.(*opForward); ok {
				waits += fmt.Sprintf(": Envelope reply id=%d from node %d", f.id, f.to)
			}
		case adminQueued: // behind every operation listed before it
			waits += fmt.Sprintf(" behind %d operations", i)
		}
		out = append(out, PendingOp{Kind: PendingAdmin, What: adminName(op), Waits: waits,
			Since: a.queued, Conn: a.req.Conn, ID: a.req.ID, HasRequest: a.req != (Request{})})
	}
	return out
}

// tokensOf returns the proposal tokens op still waits on, ascending.
func (ctl *adminController) tokensOf(op adminOp) []uint64 {
	var toks []uint64
	for tok, w := range ctl.metaWaiters {
		if w.op == op {
			toks = append(toks, tok)
		}
	}
	for id, w := range ctl.ctlWaiters {
		if w.op == op {
			toks = append(toks, id)
		}
	}
	sort.Slice(toks, func(i, j int) bool { return toks[i] < toks[j] })
	return toks
}

// pendingProposals lists the proposals awaiting their MetaAnswer.
func (ctl *adminController) pendingProposals(out []PendingOp) []PendingOp {
	for tok, w := range ctl.metaWaiters {
		out = append(out, w.pending(PendingProposal,
			fmt.Sprintf("MetaAnswer token=%d for %v", tok, w.kind)))
	}
	return out // sorted by the caller: Waits holds the token
}

// pending describes a waiting proposal or controller request, which waits for waits.
func (w metaWaiter) pending(kind PendingKind, waits string) PendingOp {
	p := PendingOp{Kind: kind, What: "producer-id block", Since: w.since, Waits: waits}
	if w.topic != "" {
		p.Waits += fmt.Sprintf(" %q", w.topic)
	}
	if w.op != nil {
		a := w.op.base()
		p.What = fmt.Sprintf("%s record %d", adminName(w.op), w.i)
		p.Conn, p.ID, p.HasRequest = a.req.Conn, a.req.ID, a.req != (Request{})
	}
	return p
}

// pendingOffsetWrites lists the offset writes waiting for the offsets topic, then
// those waiting for durability, partition by partition.
func (gc *groupCoordinator) pendingOffsetWrites(out []PendingOp,
	syncToken func(core.TopicPartition) (uint64, bool)) []PendingOp {
	add := func(w *offsetWrite) {
		p := PendingOp{Kind: PendingOffsetWrite, What: w.owner.ownerName(),
			Waits: describeWrite(w), Since: w.since}
		if w.appended {
			if tok, ok := syncToken(w.tp); ok {
				p.Waits += fmt.Sprintf(" (sync token=%d)", tok)
			}
		}
		if r, ok := ownerRequest(w.owner); ok {
			p.Conn, p.ID, p.HasRequest = r.Conn, r.ID, true
		}
		out = append(out, p)
	}
	for _, w := range gc.groups.created {
		add(w)
	}
	for _, tp := range sortedKeys(gc.groups.writes) {
		for _, w := range gc.groups.writes[tp] {
			add(w)
		}
	}
	return out
}

// sortedKeys returns a partition-keyed map's keys in partition order.
func sortedKeys[V any](m map[core.TopicPartition]V) []core.TopicPartition {
	tps := make([]core.TopicPartition, 0, len(m))
	for tp := range m {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool { return tps[i].Less(tps[j]) })
	return tps
}
