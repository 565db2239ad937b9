package broker

// The follower fetcher's requests and what it does with their answers (fetcher.go has
// the state and the ordering rules F1–F4).

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/probe"
	"github.com/sluicemq/sluice/core/replica"
)

// Code probes of the follower fetcher.
var (
	pFollowStarted         = probe.Register("broker/follower-follow-started")
	pFollowerOffline       = probe.Register("broker/follower-partition-offline")
	pFetcherTransportError = probe.Register("broker/follower-request-transport-error")
	pFollowerTruncated     = probe.Register("broker/follower-truncated-divergent-tail")
	pFetcherDiverging      = probe.Register("broker/fetcher-told-diverging-epoch")
	pFollowerFenced        = probe.Register("broker/follower-fetch-leadership-moved")
	pFollowerUnknownTopic  = probe.Register("broker/follower-fetch-leader-lacks-partition")
	pFollowerOutOfRange    = probe.Register("broker/follower-fetch-out-of-range")
	pFollowerReset         = probe.Register("broker/follower-reset-to-leader-start")
	pFollowerBadRecords    = probe.Register("broker/follower-fetched-bad-records")
	pFollowerAppended      = probe.Register("broker/follower-appended")
)

// lastEpoch is the latest epoch of rep's leader-epoch cache, -1 when it is empty.
func lastEpoch(rep *replica.Replica) int32 {
	es := rep.LeaderEpochs()
	if len(es) == 0 {
		return -1
	}
	return es[len(es)-1].Epoch
}

// sendEpochs asks the leader where each partition's latest epoch ends in its log. A
// partition with no epoch has nothing to truncate: it fetches at once.
func (rm *replicaManager) sendEpochs(link *leaderLink, parts []*followedPartition) {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = rm.cfg.NodeID
	var asked []*followedPartition
	for _, fp := range parts {
		rep := rm.replicas[fp.tp]
		last := lastEpoch(rep)
		if last >= 0 && rep.EndOffset() == rep.StartOffset() {
			// An empty log's epochs begin at its end (it led, writing nothing): they
			// go, so its first fetch does not claim an epoch the leader never had.
			if _, err := rep.TruncateTo(rep.EndOffset()); err != nil {
				rm.partitionOffline(fp)
				continue
			}
			last = -1
		}
		if last < 0 {
			fp.phase = phaseFetching
			continue
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = fp.tp.Partition, fp.epoch, last
		n := len(req.Topics)
		if n == 0 || req.Topics[n-1].Topic != fp.tp.Topic {
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = fp.tp.Topic
			req.Topics = append(req.Topics, rt)
			n++
		}
		req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, rp)
		asked = append(asked, fp)
	}
	if len(asked) == 0 {
		rm.pumpLink(link) // they all fetch now
		return
	}
	rm.startRequest(link, reqEpochs, asked, req)
}

// sendLeaderEnds asks the leader for its log end of each partition it answered
// OFFSET_OUT_OF_RANGE for.
func (rm *replicaManager) sendLeaderEnds(link *leaderLink, parts []*followedPartition) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = rm.cfg.NodeID
	for _, fp := range parts {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = fp.tp.Partition, fp.epoch, -1
		n := len(req.Topics)
		if n == 0 || req.Topics[n-1].Topic != fp.tp.Topic {
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = fp.tp.Topic
			req.Topics = append(req.Topics, rt)
			n++
		}
		req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, rp)
	}
	rm.startRequest(link, reqLeaderEnds, parts, req)
}

// sendFetch fetches every ready partition of the link in one Fetch of its session
// (fetcher_session.go): all of them when it opens a session, else those that changed.
func (rm *replicaManager) sendFetch(link *leaderLink, parts []*followedPartition) {
	fc := rm.cfg.Fetcher
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = rm.cfg.NodeID
	req.ReplicaState.ID = rm.cfg.NodeID // v15+ only; Sluice serves up to v12
	req.MaxWaitMillis, req.MinBytes = int32(fc.WaitMaxMs), int32(fc.MinBytes)
	req.MaxBytes = int32(rm.cfg.Limits.ReplicaFetchResponseMaxBytes)
	ready := make([]core.TopicPartition, 0, len(parts))
	fields := make(map[core.TopicPartition]kmsg.FetchRequestTopicPartition, len(parts))
	for _, fp := range parts {
		rep := rm.replicas[fp.tp]
		off, last, _ := rep.FetchPosition()
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch = fp.tp.Partition, fp.epoch
		rp.FetchOffset, rp.LastFetchedEpoch = off, last
		rp.LogStartOffset, rp.PartitionMaxBytes = rep.StartOffset(), int32(fc.MaxBytes)
		ready = append(ready, fp.tp)
		fields[fp.tp] = rp
	}
	link.session.sessionRequest(req, ready, fields)
	rm.startRequest(link, reqFetch, parts, req)
	link.req.sessionEpoch = req.SessionEpoch
}

// handleFetcherAnswer applies a peer's response to the request it answers.
func (rm *replicaManager) handleFetcherAnswer(link *leaderLink, req *fetcherRequest,
	in PeerReply) {
	switch req.kind {
	case reqEpochs:
		if resp, ok := in.Msg.(*kmsg.OffsetForLeaderEpochResponse); ok {
			rm.epochsAnswered(req, resp)
			return
		}
	case reqLeaderEnds:
		if resp, ok := in.Msg.(*kmsg.ListOffsetsResponse); ok {
			rm.leaderEndsAnswered(req, resp)
			return
		}
	case reqFetch:
		if resp, ok := in.Msg.(*kmsg.FetchResponse); ok {
			rm.fetchAnswered(link, req, resp)
			return
		}
	default:
		core.Invariant(false, "B11", "fetcher request of unknown kind %d", req.kind)
	}
	rm.transportFailed(link, req, PeerReply{Err: errors.New("answer of the wrong type")})
}

// answered returns the followed partition a response's entry is for, if it is still
// how that partition is followed (F4).
func (rm *replicaManager) answered(req *fetcherRequest, topic string,
	partition int32) *followedPartition {
	tp := core.TopicPartition{Topic: topic, Partition: partition}
	fp := req.parts[tp]
	if fp == nil || !rm.current(tp, fp) || rm.replicas[tp] == nil {
		return nil
	}
	return fp
}

func (rm *replicaManager) epochsAnswered(req *fetcherRequest,
	resp *kmsg.OffsetForLeaderEpochResponse) {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			fp := rm.answered(req, t.Topic, p.Partition)
			if fp == nil || fp.phase != phaseTruncating {
				continue
			}
			if p.ErrorCode != 0 {
				rm.partitionError(fp, p.ErrorCode, "OffsetForLeaderEpoch")
				continue
			}
			rm.truncateFollower(fp, p.LeaderEpoch, p.EndOffset)
		}
	}
}

// truncateFollower cuts fp's log where it stops agreeing with the leader's, whose
// leaderEpoch ends at leaderEnd (OffsetForLeaderEpoch, or a Fetch's DivergingEpoch),
// as Kafka's follower does (KIP-279): at the smaller of leaderEnd and where its own
// log ends that epoch. When this log does not have that epoch itself the cut is
// incomplete and the partition asks again with the epoch it is left with, which is
// older each time, so the rounds end.
func (rm *replicaManager) truncateFollower(fp *followedPartition, leaderEpoch int32,
	leaderEnd int64) {
	rep := rm.replicas[fp.tp]
	if _, syncing := rm.syncs[fp.tp]; syncing {
		fp.phase = phaseTruncating // F3: asked again after the SyncDone
		return
	}
	var off int64
	complete := true
	switch ownEpoch, _ := rep.EndOffsetForEpoch(leaderEpoch); {
	case leaderEpoch < 0 || leaderEnd < 0:
		// The leader has no epoch at or below this log's latest: only what is committed
		// is known to be in both logs.
		off = rep.HighWatermark()
	case ownEpoch < 0:
		// Every epoch of this log is newer than the leader's: none of it is in the
		// leader's log (Kafka keeps min(leaderEnd, end) here, which can leave a tail the
		// leader answers with the same divergence forever).
		off = rep.StartOffset()
	default:
		off, complete = rep.TruncationFor(leaderEpoch, leaderEnd)
	}
	if off < rep.StartOffset() && !mutantOn("diverged-below-start-clamps") {
		rm.divergedBelowStart(fp, rep, off)
		return
	}
	off = max(off, rep.StartOffset())
	if off < rep.EndOffset() {
		if off < rep.HighWatermark() {
			rm.lg.Warn("follower truncates below its high-water mark",
				zap.Stringer("tp", fp.tp), zap.Int64("to", off),
				zap.Int64("hwm", rep.HighWatermark()))
		}
		rm.hit(pFollowerTruncated)
	}
	end, err := rep.TruncateTo(off)
	if err != nil {
		rm.lg.Error("follower truncation failed", zap.Stringer("tp", fp.tp), zap.Error(err))
		rm.partitionOffline(fp)
		return
	}
	rm.lg.Info("follower truncated", zap.Stringer("tp", fp.tp), zap.Int32("leader", fp.leader),
		zap.Int32("leader_epoch", leaderEpoch), zap.Int64("leader_end", leaderEnd),
		zap.Int64("end", end), zap.Bool("complete", complete))
	if complete {
		fp.phase = phaseFetching
	} else {
		fp.phase = phaseTruncating
	}
}

func (rm *replicaManager) leaderEndsAnswered(req *fetcherRequest, resp *kmsg.ListOffsetsResponse) {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			fp := rm.answered(req, t.Topic, p.Partition)
			if fp == nil || fp.phase != phaseOutOfRange {
				continue
			}
			if p.ErrorCode != 0 {
				rm.partitionError(fp, p.ErrorCode, "ListOffsets")
				continue
			}
			rm.outOfRange(fp, p.Offset)
		}
	}
}

// outOfRange handles OFFSET_OUT_OF_RANGE once the leader's log end is known, as Kafka
// does: a follower ahead of the leader cuts back to the leader's end; one whose log
// ends below the leader's log start (retention or DeleteRecords removed what it would
// fetch next) empties its log and restarts at that start (resetFollower). Otherwise it
// backs off and tries again.
func (rm *replicaManager) outOfRange(fp *followedPartition, leaderEnd int64) {
	rep := rm.replicas[fp.tp]
	if fp.leaderStart > rep.EndOffset() && leaderEnd >= fp.leaderStart {
		if _, syncing := rm.syncs[fp.tp]; syncing {
			return // F3: asked again after the SyncDone
		}
		rm.resetFollower(fp, rep)
		return
	}
	if leaderEnd >= 0 && rep.EndOffset() > leaderEnd {
		if _, syncing := rm.syncs[fp.tp]; syncing {
			return // F3: asked again after the SyncDone
		}
		rm.hit(pFollowerTruncated)
		if leaderEnd < rep.HighWatermark() {
			rm.lg.Warn("follower truncates below its high-water mark",
				zap.Stringer("tp", fp.tp), zap.Int64("to", leaderEnd),
				zap.Int64("hwm", rep.HighWatermark()))
		}
		end, err := rep.TruncateTo(max(leaderEnd, rep.StartOffset()))
		if err != nil {
			rm.lg.Error("follower truncation failed", zap.Stringer("tp", fp.tp),
				zap.Error(err))
			rm.partitionOffline(fp)
			return
		}
		rm.lg.Info("follower was ahead of its leader; truncated", zap.Stringer("tp", fp.tp),
			zap.Int32("leader", fp.leader), zap.Int64("end", end))
		fp.phase = phaseFetching
		return
	}
	rm.lg.Warn("follower is behind its leader's log start; cannot restart there yet",
		zap.Stringer("tp", fp.tp), zap.Int32("leader", fp.leader),
		zap.Int64("end", rep.EndOffset()), zap.Int64("leader_end", leaderEnd),
		zap.Int64("leader_log_start", fp.leaderStart))
	fp.phase = phaseFetching
	rm.backOff(fp)
}

// resetFollower empties a follower's log and restarts it at its leader's log start
// (Kafka's truncateFullyAndStartAt), then fetches from there.
func (rm *replicaManager) resetFollower(fp *followedPartition, rep *replica.Replica) {
	rm.hit(pFollowerReset)
	from := rep.EndOffset()
	if !rm.resetTo(fp, rep, fp.leaderStart, "its leader's log start") {
		return
	}
	rm.lg.Warn("follower was behind its leader's log start; emptied its log and "+
		"restarts there", zap.Stringer("tp", fp.tp), zap.Int32("leader", fp.leader),
		zap.Int64("end", from), zap.Int64("leader_log_start", fp.leaderStart))
	fp.phase = phaseFetching
}

// divergedBelowStart handles a follower whose log diverges from its leader's at off,
// below its own log start: nothing it holds is in the leader's log. As Kafka's
// truncateTo below the log start (truncateFullyAndStartAt), it empties its log and
// restarts at off, a batch boundary of the leader's log, and fetches from there; a
// leader whose log starts past off answers OFFSET_OUT_OF_RANGE, and the follower then
// restarts at the leader's log start (outOfRange). Cutting at its own log start
// instead kept its old epochs, and the leader answered every fetch with the same
// divergence.
func (rm *replicaManager) divergedBelowStart(fp *followedPartition, rep *replica.Replica,
	off int64) {
	rm.hit(pFollowerTruncated)
	from, start := rep.EndOffset(), rep.StartOffset()
	if !rm.resetTo(fp, rep, off, "the divergence point") {
		return
	}
	rm.lg.Warn("follower diverged from its leader below its log start; emptied its log "+
		"and restarts at the divergence point", zap.Stringer("tp", fp.tp),
		zap.Int32("leader", fp.leader), zap.Int64("at", off), zap.Int64("log_start", start),
		zap.Int64("end", from))
	fp.phase = phaseFetching
}

// resetTo empties the follower's log and restarts it at off (Replica.ResetTo), saying
// whether it did. When it could not (where names off for the log) the partition stops
// if its log went offline, and otherwise fetches again after a backoff.
func (rm *replicaManager) resetTo(fp *followedPartition, rep *replica.Replica, off int64,
	where string) bool {
	err := rep.ResetTo(off, rm.now.Millis())
	if err == nil {
		return true
	}
	rm.lg.Error("follower could not restart at "+where, zap.Stringer("tp", fp.tp),
		zap.Int64("at", off), zap.Error(err))
	if rep.Offline() {
		rm.partitionOffline(fp)
		return false
	}
	fp.phase = phaseFetching
	rm.backOff(fp)
	return false
}

// restartAtFirstBatch handles the first records an empty follower log gets when its
// start falls inside the leader's first batch: the leader's log start, which the
// follower restarted at (resetFollower), is not a batch boundary after a DeleteRecords
// or a retention cut there, and the leader sends the whole batch holding it. As
// Kafka's follower does (Partition.appendRecordsToFollowerOrFutureReplica), the log
// restarts at that batch's base offset, which the batch then continues; refusing it,
// the follower asked for the same batch again forever. It says whether the records may
// be appended now.
func (rm *replicaManager) restartAtFirstBatch(fp *followedPartition, rep *replica.Replica,
	records []byte) bool {
	h, err := batch.ParseHeader(records)
	end := rep.EndOffset()
	if err != nil || end != rep.StartOffset() || h.BaseOffset >= end ||
		h.NextOffset() <= end || mutantOn("follower-refuses-batch-across-start") {
		return true // AppendReplicated decides
	}
	if _, syncing := rm.syncs[fp.tp]; syncing {
		return true // refused as before; asked again after a backoff
	}
	if !rm.resetTo(fp, rep, h.BaseOffset, "its leader's batch holding its log start") {
		return false
	}
	rm.lg.Info("follower log start was inside the leader's first batch; restarted at "+
		"the batch", zap.Stringer("tp", fp.tp), zap.Int64("start", end),
		zap.Int64("batch", h.BaseOffset))
	return true
}

// partitionError backs a partition off after an error code from its leader.
func (rm *replicaManager) partitionError(fp *followedPartition, code int16, api string) {
	switch code {
	case kerr.NotLeaderForPartition.Code, kerr.FencedLeaderEpoch.Code,
		kerr.UnknownLeaderEpoch.Code:
		// Leadership moved or this node's view is not the leader's yet: the metadata
		// (follow with a new leader or epoch) will catch up; ask again after a backoff.
		rm.hit(pFollowerFenced)
		rm.lg.Info("leader refused the follower; waiting for new metadata",
			zap.Stringer("tp", fp.tp), zap.Int32("leader", fp.leader),
			zap.Int32("leader_epoch", fp.epoch), zap.String("api", api),
			zap.String("error", kerr.ErrorForCode(code).Error()))
	case kerr.UnknownTopicOrPartition.Code:
		rm.hit(pFollowerUnknownTopic)
		lvl := zap.InfoLevel // usual for a moment after a topic is created
		if fp.failures >= unknownTopicQuickRetries {
			lvl = zap.WarnLevel
		}
		rm.lg.Log(lvl, "leader does not host the partition yet; asking again",
			zap.Stringer("tp", fp.tp), zap.Int32("leader", fp.leader), zap.String("api", api),
			zap.Int("failures_in_a_row", fp.failures+1))
	default:
		rm.lg.Warn("leader answered the follower with an error; backing off",
			zap.Stringer("tp", fp.tp), zap.Int32("leader", fp.leader), zap.String("api", api),
			zap.String("error", errorName(code)))
	}
	rm.backOff(fp)
	switch {
	case code == kerr.UnknownLeaderEpoch.Code:
		// This node applied the leader change before its leader did (the controller's
		// node applies first); the leader catches up within milliseconds, and no new
		// metadata will come here to wake the partition. Waiting out
		// replica.fetch.backoff.ms (1 s) would hold every acks=all write on the new
		// leader that long after a failover.
		fp.retryAt = min(fp.retryAt, rm.now.AddMillis(unknownEpochRetryMs))
	case code == kerr.UnknownTopicOrPartition.Code && fp.failures <= unknownTopicQuickRetries &&
		!mutantOn("fetcher-unknown-topic-full-backoff"):
		// The same for a new partition: this node applied the topic's creation (or the
		// reassignment that adds it) before its leader did. Waiting out the backoff held
		// the first second of every acks=all produce to a new topic (p99 1.1 s in
		// `sluice bench cluster`). A leader that still does not host it after the quick
		// retries is asked at replica.fetch.backoff.ms.
		fp.retryAt = min(fp.retryAt, rm.now.AddMillis(unknownEpochRetryMs))
	}
}

// unknownEpochRetryMs is how soon a follower ahead of its leader's epoch, or of its
// leader's view of a new partition, asks again.
const unknownEpochRetryMs = 50

// unknownTopicQuickRetries is how many UNKNOWN_TOPIC_OR_PARTITION answers in a row a
// follower retries after unknownEpochRetryMs before it backs off fully: half a second,
// far more than a leader takes to apply a committed metadata record.
const unknownTopicQuickRetries = 10

func errorName(code int16) string {
	if err := kerr.ErrorForCode(code); err != nil {
		return err.Error()
	}
	return "none"
}

func (rm *replicaManager) fetchAnswered(link *leaderLink, req *fetcherRequest,
	resp *kmsg.FetchResponse) {
	if resp.ErrorCode != 0 {
		if !rm.sessionError(link, resp.ErrorCode) {
			rm.transportFailed(link, req, PeerReply{Err: kerr.ErrorForCode(resp.ErrorCode)})
		}
		return
	}
	rm.sessionAnswered(link, req, resp)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			fp := rm.answered(req, t.Topic, p.Partition)
			if fp == nil || fp.phase != phaseFetching {
				continue
			}
			switch p.ErrorCode {
			case 0:
				rm.fetchedPartition(fp, &p)
			case kerr.OffsetOutOfRange.Code:
				rm.hit(pFollowerOutOfRange)
				fp.phase = phaseOutOfRange
				if p.LogStartOffset >= 0 {
					fp.leaderStart = p.LogStartOffset
				}
			default:
				rm.partitionError(fp, p.ErrorCode, "Fetch")
			}
		}
	}
}

// fetchedPartition appends what the leader sent for one partition, takes its
// high-water mark and log start, or truncates where it says the logs diverge.
func (rm *replicaManager) fetchedPartition(fp *followedPartition,
	p *kmsg.FetchResponseTopicPartition) {
	rep := rm.replicas[fp.tp]
	if d := p.DivergingEpoch; d.Epoch >= 0 && d.EndOffset >= 0 {
		rm.hit(pFetcherDiverging)
		rm.truncateFollower(fp, d.Epoch, d.EndOffset)
		return
	}
	records := wholeBatches(p.RecordBatches)
	if len(records) == 0 && len(p.RecordBatches) > 0 {
		// Only a cut batch: fetched again whole it would be the same, so this leader
		// sends nothing usable; back off rather than ask again at once.
		rm.appendFailed(fp, rep, errors.New("only a partial batch in the fetch answer"))
	}
	if len(records) > 0 && rm.restartAtFirstBatch(fp, rep, records) {
		n, err := rep.AppendReplicated(rm.now.Millis(), records)
		if n > 0 {
			rm.hit(pFollowerAppended)
			if rep.FlushAlways() {
				rm.fetcher.links[fp.leader].syncing[fp.tp] = true
			}
			rm.produces.dirty = append(rm.produces.dirty, fp.tp)
			rm.requestSyncs() // F2: the next fetch waits for this sync
		}
		if err != nil {
			rm.appendFailed(fp, rep, err)
		} else {
			fp.failures = 0
		}
	}
	fp.leaderHWM, fp.leaderStart = p.HighWatermark, p.LogStartOffset
	if fp.leaderHWM >= 0 && rep.SetLeaderHighWatermark(fp.leaderHWM) {
		rm.hwmAdvanced(fp.tp)
	}
	rm.followLogStart(fp, rep)
}

// appendFailed handles records the replica refused: an older epoch than its log's
// means it must truncate first; anything else (a corrupt or misplaced batch) is logged
// and the partition backs off; a log gone offline stops it.
func (rm *replicaManager) appendFailed(fp *followedPartition, rep *replica.Replica, err error) {
	switch {
	case rep.Offline():
		rm.partitionOffline(fp)
	case errors.Is(err, replica.ErrEpochWentBack):
		fp.phase = phaseTruncating
	default:
		rm.hit(pFollowerBadRecords)
		rm.lg.Warn("follower refused the leader's records; backing off",
			zap.Stringer("tp", fp.tp), zap.Int32("leader", fp.leader),
			zap.Int("backoff_ms", rm.cfg.Fetcher.BackoffMs), zap.Error(err))
		rm.backOff(fp)
	}
}

// followLogStart moves the follower's log start up to its leader's, as far as its own
// high-water mark (retention and DeleteRecords on the leader).
func (rm *replicaManager) followLogStart(fp *followedPartition, rep *replica.Replica) {
	target := min(fp.leaderStart, rep.HighWatermark())
	if target <= rep.StartOffset() {
		return
	}
	if _, code := rep.DeleteRecordsBefore(target); code != 0 {
		rm.lg.Warn("follower did not move its log start", zap.Stringer("tp", fp.tp),
			zap.Int64("to", target), zap.String("error", errorName(code)))
	}
}

// wholeBatches drops a batch cut short at the end of a fetched record set (a leader
// may stop inside one at its byte limit); anything else malformed is left for
// AppendReplicated to refuse.
func wholeBatches(b []byte) []byte {
	n := 0
	for n < len(b) {
		rest := b[n:]
		if len(rest) < batch.HeaderSize {
			break
		}
		h, err := batch.ParseHeader(rest)
		if err != nil {
			return b // refused, with its reason, by AppendReplicated
		}
		if h.Size() > len(rest) {
			break
		}
		n += h.Size()
	}
	return b[:n]
}
