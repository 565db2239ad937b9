package disk

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"

	"github.com/sluicemq/sluice/core/batch"
)

// offsetEntry maps a batch's base offset (relative to the segment base) to its file
// position. The in-memory index holds one every IndexInterval bytes, as Kafka's does.
type offsetEntry struct {
	rel uint32
	pos uint32
}

// timeEntry records that every batch up to and including the one at pos has a max
// timestamp <= ts, and that this batch raised the segment's max timestamp to ts.
type timeEntry struct {
	ts  int64
	rel uint32
	pos uint32
}

// segIndex is a segment's sparse offset index, its sparse time index and its exact
// max timestamp. Entries are in increasing position order, so both lookups are binary
// searches.
type segIndex struct {
	offs     []offsetEntry
	times    []timeEntry
	lastOff  int64 // position of the newest offset entry (0 stands for the implicit first)
	lastTime int64 // position of the newest time entry
	maxTs    int64 // -1 when the segment is empty
	maxTsOff int64 // base offset of the first batch carrying maxTs, -1 when empty
}

func newSegIndex() segIndex { return segIndex{maxTs: -1, maxTsOff: -1} }

// add records the batch h written at pos in a segment starting at base. The first batch
// needs no offset entry: a lookup that finds none starts at position 0.
func (x *segIndex) add(h *batch.Header, base, pos int64, interval int) {
	if pos-x.lastOff >= int64(interval) {
		x.offs = append(x.offs, offsetEntry{rel: uint32(h.BaseOffset - base), pos: uint32(pos)})
		x.lastOff = pos
	}
	if h.MaxTimestamp > x.maxTs {
		x.maxTs, x.maxTsOff = h.MaxTimestamp, h.BaseOffset
		if len(x.times) == 0 || pos-x.lastTime >= int64(interval) {
			e := timeEntry{ts: h.MaxTimestamp, rel: uint32(h.BaseOffset - base), pos: uint32(pos)}
			x.times = append(x.times, e)
			x.lastTime = pos
		}
	}
}

// lookupOffset returns the position of a batch at or before the one containing the
// offset base+rel: the newest entry whose batch starts at or before it.
func (x *segIndex) lookupOffset(rel uint32) int64 {
	pos, _ := x.lookupOffsetEntry(rel)
	return pos
}

// lookupOffsetEntry is lookupOffset that also returns the relative base offset of the
// batch at the position, so that a scan from there can check the offsets chain.
func (x *segIndex) lookupOffsetEntry(rel uint32) (pos int64, at uint32) {
	lo, hi := 0, len(x.offs) // invariant: entries before lo qualify, from hi on do not
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if x.offs[mid].rel <= rel {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if mutantOn("offset-index-next") && lo < len(x.offs) {
		return int64(x.offs[lo].pos), x.offs[lo].rel
	}
	if lo == 0 {
		return 0, 0
	}
	return int64(x.offs[lo-1].pos), x.offs[lo-1].rel
}

// lookupTime returns a position from which scanning forward finds the first batch whose
// max timestamp is >= ts: the newest entry below ts proves every batch up to it is
// earlier. at is the relative base offset of the batch at that position.
func (x *segIndex) lookupTime(ts int64) (pos int64, at uint32) {
	lo, hi := 0, len(x.times)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if x.times[mid].ts < ts {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if mutantOn("time-index-next") && lo < len(x.times) {
		return int64(x.times[lo].pos), x.times[lo].rel
	}
	if lo == 0 {
		return 0, 0
	}
	return int64(x.times[lo-1].pos), x.times[lo-1].rel
}

// Index files. Both share one header; the CRC-32C at the end covers everything before
// it, so a torn or stale-length file is rejected and the index rebuilt.
//
//	magic    [4]byte  "SLXO" (offset index) or "SLXT" (time index)
//	version  uint32   1
//	base     int64    segment base offset
//	size     int64    segment bytes the index covers (a certified, synced prefix)
//	next     int64    offset after the last covered batch
//	maxTs    int64    max timestamp over the covered batches (-1 if none)
//	maxTsOff int64    base offset of the batch carrying it (-1 if none)
//	count    uint32   entries that follow
//	entries           offset: rel uint32, pos uint32; time: ts int64, rel uint32, pos uint32
//	crc      uint32
const (
	indexVersion    = 1
	indexHeaderSize = 4 + 4 + 8*5 + 4
	offsetEntrySize = 8
	timeEntrySize   = 16
)

var (
	offsetMagic = [4]byte{'S', 'L', 'X', 'O'}
	timeMagic   = [4]byte{'S', 'L', 'X', 'T'}
	castagnoli  = crc32.MakeTable(crc32.Castagnoli)

	errBadIndex = errors.New("index file invalid")
)

// indexHeader is what an index file certifies about its segment.
type indexHeader struct {
	base, size, next, maxTs, maxTsOff int64
}

func putHeader(b []byte, magic [4]byte, h indexHeader, count int) {
	copy(b, magic[:])
	binary.BigEndian.PutUint32(b[4:], indexVersion)
	binary.BigEndian.PutUint64(b[8:], uint64(h.base))
	binary.BigEndian.PutUint64(b[16:], uint64(h.size))
	binary.BigEndian.PutUint64(b[24:], uint64(h.next))
	binary.BigEndian.PutUint64(b[32:], uint64(h.maxTs))
	binary.BigEndian.PutUint64(b[40:], uint64(h.maxTsOff))
	binary.BigEndian.PutUint32(b[48:], uint32(count))
}

func sealIndex(b []byte) []byte {
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func encodeOffsetIndex(h indexHeader, offs []offsetEntry) []byte {
	b := make([]byte, indexHeaderSize, indexHeaderSize+len(offs)*offsetEntrySize+4)
	putHeader(b, offsetMagic, h, len(offs))
	for _, e := range offs {
		b = binary.BigEndian.AppendUint32(b, e.rel)
		b = binary.BigEndian.AppendUint32(b, e.pos)
	}
	return sealIndex(b)
}

func encodeTimeIndex(h indexHeader, times []timeEntry) []byte {
	b := make([]byte, indexHeaderSize, indexHeaderSize+len(times)*timeEntrySize+4)
	putHeader(b, timeMagic, h, len(times))
	for _, e := range times {
		b = binary.BigEndian.AppendUint64(b, uint64(e.ts))
		b = binary.BigEndian.AppendUint32(b, e.rel)
		b = binary.BigEndian.AppendUint32(b, e.pos)
	}
	return sealIndex(b)
}

// decodeHeader checks magic, version, length and CRC and returns the header, the entry
// bytes and the entry count.
func decodeHeader(b []byte, magic [4]byte, entrySize int) (indexHeader, []byte, int, error) {
	var h indexHeader
	if len(b) < indexHeaderSize+4 || [4]byte(b[:4]) != magic {
		return h, nil, 0, errBadIndex
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum || binary.BigEndian.Uint32(b[4:]) != indexVersion {
		return h, nil, 0, errBadIndex
	}
	h.base = int64(binary.BigEndian.Uint64(b[8:]))
	h.size = int64(binary.BigEndian.Uint64(b[16:]))
	h.next = int64(binary.BigEndian.Uint64(b[24:]))
	h.maxTs = int64(binary.BigEndian.Uint64(b[32:]))
	h.maxTsOff = int64(binary.BigEndian.Uint64(b[40:]))
	count := int(binary.BigEndian.Uint32(b[48:]))
	entries := body[indexHeaderSize:]
	if count < 0 || len(entries) != count*entrySize {
		return h, nil, 0, errBadIndex
	}
	return h, entries, count, nil
}

// decodeIndexes parses both index files of a segment and checks that they agree with
// each other and are internally consistent (entries increasing and inside the covered
// prefix). It returns the header and the rebuilt segIndex.
func decodeIndexes(offB, timeB []byte) (indexHeader, segIndex, error) {
	x := newSegIndex()
	oh, oents, on, err := decodeHeader(offB, offsetMagic, offsetEntrySize)
	if err != nil {
		return oh, x, err
	}
	th, tents, tn, err := decodeHeader(timeB, timeMagic, timeEntrySize)
	if err != nil || th != oh || oh.size < 0 || oh.next < oh.base {
		return oh, x, errBadIndex
	}
	x.offs = make([]offsetEntry, on)
	for i := range x.offs {
		e := offsetEntry{
			rel: binary.BigEndian.Uint32(oents[i*offsetEntrySize:]),
			pos: binary.BigEndian.Uint32(oents[i*offsetEntrySize+4:]),
		}
		if int64(e.pos) >= oh.size || (i > 0 && (e.pos <= x.offs[i-1].pos || e.rel <= x.offs[i-1].rel)) {
			return oh, x, errBadIndex
		}
		x.offs[i] = e
		x.lastOff = int64(e.pos)
	}
	x.times = make([]timeEntry, tn)
	for i := range x.times {
		p := tents[i*timeEntrySize:]
		e := timeEntry{
			ts:  int64(binary.BigEndian.Uint64(p)),
			rel: binary.BigEndian.Uint32(p[8:]),
			pos: binary.BigEndian.Uint32(p[12:]),
		}
		prev := timeEntry{ts: math.MinInt64}
		if i > 0 {
			prev = x.times[i-1]
		}
		if int64(e.pos) >= oh.size || e.ts > oh.maxTs || (i > 0 && e.pos <= prev.pos) || e.ts <= prev.ts {
			return oh, x, errBadIndex
		}
		x.times[i] = e
		x.lastTime = int64(e.pos)
	}
	x.maxTs, x.maxTsOff = oh.maxTs, oh.maxTsOff
	return oh, x, nil
}
