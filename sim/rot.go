package sim

import (
	"errors"
	"hash/crc32"
	"path"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/disk"
	"github.com/sluicemq/sluice/linearizability"
)

// Corruption at rest. The rot fault flips one bit of a synced byte of a partition's
// segment (MemFS.Rot). The broker must find it by checksum before serving the batch
// (disk verifies every batch a read returns), take the partition offline
// (KAFKA_STORAGE_ERROR) and, after a restart, start the log past the rotten batch: its
// records are lost, every other offset stays where it was. The world models the
// operator (or systemd) that restarts a broker whose storage failed, as Kafka's broker
// halts when its only log directory goes offline.
//
// What the checkers are told: each rot is recorded as a Trim of its partition to the
// offset after the rotten batch, from the moment it happened (the records below may be
// gone from then on, as after a DeleteRecords). Nothing else is forgiven: a rotten
// byte reaching a client fails the seed (corrupt-served: the readers check every
// fetched batch's CRC-32C themselves, as franz-go consumers do), so does a corrupt read
// on a node whose disk never rotted (false-corruption), and a log start past a rotten
// batch's end is still log-start-too-far.
//
// Which bytes rot: one bit of a batch of a user topic's partition (the offsets topic's
// committed offsets would need the register checker to know what a rot took back),
// not the compacted topic's (compact.go: its checker holds every acknowledged latest
// value to be there, with no trim to excuse it), a batch followed by another synced
// batch in its segment file (rot in a segment's last batch is indistinguishable from a torn write to recovery, which truncates it
// and reuses its offsets), at most once per partition per run, in a byte the CRC covers
// or in the base offset, not in the length, partition leader epoch or magic (a flipped
// length loses the framing; the epoch is outside the CRC and unchecked, as in Kafka).

// errCorruptServed marks a fetched batch whose CRC-32C does not match its bytes.
var errCorruptServed = errors.New("CRC-32C mismatch: a corrupt batch was served")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checkServedCRC verifies one fetched batch's CRC with the checker's own code (the
// broker's batch.Check is what a mutant may break).
func checkServedCRC(b []byte) error {
	if len(b) < batch.HeaderSize {
		return nil
	}
	want := uint32(b[17])<<24 | uint32(b[18])<<16 | uint32(b[19])<<8 | uint32(b[20])
	if crc32.Checksum(b[21:], castagnoli) != want {
		return errCorruptServed
	}
	return nil
}

// failDecode reports a fetch whose batches do not decode, as corrupt-served when a
// checksum failed and undecodable-batch otherwise.
func (w *World) failDecode(what string, err error) {
	kind := "undecodable-batch"
	if errors.Is(err, errCorruptServed) {
		kind = "corrupt-served"
	}
	w.fail("anomaly", "%s %s: %v", kind, what, err)
}

// rotCandidate is a synced batch that may rot.
type rotCandidate struct {
	path      string
	tp        core.TopicPartition
	pos, size int64
	next      int64 // the offset after the batch
}

// rot flips one bit of a synced batch on the node's disk; false when nothing can rot.
func (n *node) rot() bool {
	var cands []rotCandidate
	for _, f := range n.fs.DurableFiles("/data") {
		tp, ok := segmentTP(f.Path)
		if !ok || strings.HasPrefix(tp.Topic, "__") || tp.Topic == compactTopic || n.rotted[tp] {
			continue
		}
		b, _ := n.fs.ReadDurable(f.Path)
		cands = appendRotCandidates(cands, f.Path, tp, b)
	}
	if len(cands) == 0 {
		return false
	}
	c := cands[n.rotR.Intn(len(cands))]
	// Skip bytes 8..16: length, partition leader epoch, magic.
	off := int64(n.rotR.Intn(int(c.size) - 9))
	if off >= 8 {
		off += 9
	}
	mask := byte(1) << n.rotR.Intn(8)
	if !n.fs.Rot(c.path, c.pos+off, mask) {
		return false
	}
	n.rotted[c.tp] = true
	n.rots++
	n.w.hist.Trims = append(n.w.hist.Trims, linearizability.Trim{Topic: c.tp.Topic,
		Partition: c.tp.Partition, At: n.w.now, Offset: c.next, Rot: true})
	n.lg.Info("rot injected", zap.String("file", c.path), zap.Int64("byte", c.pos+off),
		zap.Int64("batch_end_offset", c.next))
	n.w.tr.note("rot", c.pos+off, c.next)
	return true
}

// appendRotCandidates adds the batches of one segment's durable bytes b that another
// whole batch follows.
func appendRotCandidates(cands []rotCandidate, p string, tp core.TopicPartition,
	b []byte) []rotCandidate {
	var prev *batch.Header
	prevPos := 0
	for pos := 0; pos+batch.HeaderSize <= len(b); {
		h, err := batch.ParseHeader(b[pos:])
		if err != nil || pos+h.Size() > len(b) {
			break
		}
		if prev != nil && h.BaseOffset == prev.NextOffset() {
			cands = append(cands, rotCandidate{path: p, tp: tp, pos: int64(prevPos),
				size: int64(prev.Size()), next: prev.NextOffset()})
		}
		prev, prevPos = &h, pos
		pos += h.Size()
	}
	return cands
}

// segmentTP parses /data/<topic>-<partition>/<base>.log.
func segmentTP(p string) (core.TopicPartition, bool) {
	if path.Ext(p) != ".log" {
		return core.TopicPartition{}, false
	}
	dir := path.Base(path.Dir(p))
	i := strings.LastIndexByte(dir, '-')
	if i <= 0 {
		return core.TopicPartition{}, false
	}
	part, err := strconv.Atoi(dir[i+1:])
	if err != nil {
		return core.TopicPartition{}, false
	}
	return core.TopicPartition{Topic: dir[:i], Partition: int32(part)}, true
}

// staleWrites runs just before a crash: unsynced tails may show stale blocks.
func (n *node) staleWrites() {
	f := n.w.cfg.Faults
	if !f.StaleWrites.On || f.StaleWriteChance <= 0 {
		return
	}
	if k := n.fs.StaleWrites(n.rotR, f.StaleWriteChance); k > 0 {
		n.stales += k
		n.w.stats.Faults["stale-write"] += k
	}
}

// corruptRead is called when a read of this incarnation found a corrupt batch. A node
// whose disk never rotted nor saw stale blocks has no corrupt bytes: the check itself
// is wrong. Otherwise the broker's storage failed as it should, and the operator
// restarts it.
func (n *node) corruptRead(gen uint64, err error) {
	if n.rots == 0 && n.stales == 0 {
		n.w.fail("anomaly", "false-corruption node %d: a read reported corruption, "+
			"but nothing rotted: %v", n.id, err)
	}
	n.w.stats.Faults["rot-detected"]++
	if n.rotRestart == gen {
		return
	}
	n.rotRestart = gen
	n.w.after(n.w.cfg.Timing.RestartDelayMs*ms, KindRestart, n.id, gen, 1, func() {
		if n.up && n.gen == gen {
			n.w.stats.Faults["rot-restart"]++
			n.restartProcess()
		}
	})
}

// simLog is a partition log that tells its node about corrupt reads.
type simLog struct {
	*disk.PartitionLog
	n   *node
	gen uint64
	tp  core.TopicPartition
}

func (l simLog) Read(offset int64, maxBytes int, upTo int64) ([]byte, error) {
	b, err := l.PartitionLog.Read(offset, maxBytes, upTo)
	l.checkCorrupt(err)
	return b, err
}

// OffsetForTimestamp and ScanHeaders walk batch headers, whose base offsets the CRC
// does not cover: they find a rotten one too.
func (l simLog) OffsetForTimestamp(ts int64) (int64, bool, error) {
	off, ok, err := l.PartitionLog.OffsetForTimestamp(ts)
	l.checkCorrupt(err)
	return off, ok, err
}

func (l simLog) ScanHeaders(from int64, fn func(h batch.Header) error) error {
	err := l.PartitionLog.ScanHeaders(from, fn)
	l.checkCorrupt(err)
	return err
}

// TruncateTo rebuilds the cut segment's index from its headers: it finds rot too.
func (l simLog) TruncateTo(offset int64) (int64, error) {
	end, err := l.PartitionLog.TruncateTo(offset)
	l.checkCorrupt(err)
	return end, err
}

func (l simLog) checkCorrupt(err error) {
	if err != nil && errors.Is(err, disk.ErrCorrupt) {
		l.n.corruptRead(l.gen, err)
	}
}
