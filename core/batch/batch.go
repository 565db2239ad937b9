package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// HeaderSize is the size of a v2 RecordBatch header in bytes.
const HeaderSize = 61

// lengthPrefix is the number of bytes (baseOffset + batchLength) that batchLength does not
// count.
const lengthPrefix = 12

// MaxBatchBytes bounds any single batch the parser will accept, whatever the topic says.
// It keeps a corrupt length field from making a reader allocate gigabytes.
const MaxBatchBytes = 64 << 20

// Attribute bits.
const (
	AttrCompressionMask = 0x07
	AttrLogAppendTime   = 0x08
	AttrTransactional   = 0x10
	AttrControl         = 0x20
)

// Compression codecs as carried in the attributes.
const (
	CompressionNone   = 0
	CompressionGzip   = 1
	CompressionSnappy = 2
	CompressionLz4    = 3
	CompressionZstd   = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors returned by Parse and Validate. They map to Kafka error codes at the edge:
// ErrCorrupt → CORRUPT_MESSAGE, ErrTooShort/ErrBadLength → CORRUPT_MESSAGE,
// ErrUnsupportedMagic → UNSUPPORTED_FOR_MESSAGE_FORMAT.
var (
	ErrTooShort          = errors.New("batch: shorter than a v2 header")
	ErrBadLength         = errors.New("batch: length field disagrees with the bytes")
	ErrUnsupportedMagic  = errors.New("batch: magic is not 2")
	ErrCorrupt           = errors.New("batch: CRC-32C mismatch")
	ErrBadRecordCount    = errors.New("batch: record count disagrees with lastOffsetDelta")
	ErrBadCompression    = errors.New("batch: unknown compression codec")
	ErrControlFromClient = errors.New("batch: control batches may not be produced")
)

// Header is the decoded fixed header of one batch.
type Header struct {
	BaseOffset           int64
	Length               int32 // batchLength: bytes after the length field
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordCount          int32
}

// Size is the number of bytes the whole batch occupies, header included.
func (h *Header) Size() int { return int(h.Length) + lengthPrefix }

// LastOffset is the offset of the last record in the batch.
func (h *Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset just past the batch.
func (h *Header) NextOffset() int64 { return h.LastOffset() + 1 }

// LastSequence is the sequence number of the last record, wrapping as Kafka does.
func (h *Header) LastSequence() int32 {
	if h.BaseSequence < 0 {
		return h.BaseSequence
	}
	return int32((int64(h.BaseSequence) + int64(h.LastOffsetDelta)) % (1 << 31))
}

// Compression returns the codec bits of the attributes.
func (h *Header) Compression() int { return int(h.Attributes) & AttrCompressionMask }

// IsTransactional reports the transactional attribute bit.
func (h *Header) IsTransactional() bool { return h.Attributes&AttrTransactional != 0 }

// IsControl reports the control attribute bit.
func (h *Header) IsControl() bool { return h.Attributes&AttrControl != 0 }

// HasProducer reports whether the batch belongs to an idempotent or transactional
// producer.
func (h *Header) HasProducer() bool { return h.ProducerID >= 0 }

// ParseHeader decodes the header at the start of b without checking the CRC. It checks
// that b holds at least the header and that the length field is sane, not that b holds
// the whole batch.
func ParseHeader(b []byte) (Header, error) {
	var h Header
	if len(b) < HeaderSize {
		return h, ErrTooShort
	}
	h.BaseOffset = int64(binary.BigEndian.Uint64(b[0:]))
	h.Length = int32(binary.BigEndian.Uint32(b[8:]))
	h.PartitionLeaderEpoch = int32(binary.BigEndian.Uint32(b[12:]))
	h.Magic = int8(b[16])
	h.CRC = binary.BigEndian.Uint32(b[17:])
	h.Attributes = int16(binary.BigEndian.Uint16(b[21:]))
	h.LastOffsetDelta = int32(binary.BigEndian.Uint32(b[23:]))
	h.BaseTimestamp = int64(binary.BigEndian.Uint64(b[27:]))
	h.MaxTimestamp = int64(binary.BigEndian.Uint64(b[35:]))
	h.ProducerID = int64(binary.BigEndian.Uint64(b[43:]))
	h.ProducerEpoch = int16(binary.BigEndian.Uint16(b[51:]))
	h.BaseSequence = int32(binary.BigEndian.Uint32(b[53:]))
	h.RecordCount = int32(binary.BigEndian.Uint32(b[57:]))
	if h.Magic != 2 {
		return h, ErrUnsupportedMagic
	}
	if h.Length < HeaderSize-lengthPrefix || int(h.Length) > MaxBatchBytes {
		return h, ErrBadLength
	}
	return h, nil
}

// ComputeCRC returns the CRC-32C over the bytes the batch CRC covers.
func ComputeCRC(b []byte) uint32 { return crc32.Checksum(b[21:], castagnoli) }

// Check parses the header of the single batch b and verifies the things the broker
// relies on: exact length, CRC, a record count matching the offset delta, and a known
// codec. It is used on append (bytes from a client) and on recovery (bytes from disk).
func Check(b []byte) (Header, error) {
	h, err := checkFrame(b)
	if err != nil {
		return h, err
	}
	if h.RecordCount <= 0 || h.LastOffsetDelta != h.RecordCount-1 {
		return h, ErrBadRecordCount
	}
	if h.Compression() > CompressionZstd {
		return h, ErrBadCompression
	}
	return h, nil
}

// checkFrame parses b's header and checks what every batch must satisfy, stored or
// produced: its length is the header's, and its CRC matches.
func checkFrame(b []byte) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if h.Size() != len(b) {
		return h, fmt.Errorf("%w: header says %d bytes, have %d", ErrBadLength, h.Size(), len(b))
	}
	if ComputeCRC(b) != h.CRC && !mutantOn("crc-unchecked") {
		return h, ErrCorrupt
	}
	return h, nil
}

// CheckStored is Check for a batch as a log may hold it after compaction (the cleaner
// removes records but keeps the batch's base offset and lastOffsetDelta, as Kafka's
// does): the record count may be below lastOffsetDelta+1, down to zero for a batch
// kept only for its offsets or its producer state. Recovery, reads and followers use
// it; produce keeps the strict Check.
func CheckStored(b []byte) (Header, error) {
	h, err := checkFrame(b)
	if err != nil {
		return h, err
	}
	if h.RecordCount < 0 || h.LastOffsetDelta < 0 ||
		int64(h.RecordCount) > int64(h.LastOffsetDelta)+1 {
		return h, ErrBadRecordCount
	}
	if h.Compression() > CompressionZstd {
		return h, ErrBadCompression
	}
	return h, nil
}

// Split cuts a Produce request's record set into its batches, checking each with Check.
// Kafka clients send one batch per partition, but the format allows several.
func Split(records []byte, fn func(h Header, b []byte) error) error {
	return split(records, Check, fn)
}

// SplitStored is Split for batches a log holds, checking each with CheckStored: a
// follower replicating a compacted leader's log gets batches the cleaner emptied or
// thinned (record count below lastOffsetDelta+1), which Check refuses.
func SplitStored(records []byte, fn func(h Header, b []byte) error) error {
	return split(records, CheckStored, fn)
}

func split(records []byte, check func([]byte) (Header, error),
	fn func(h Header, b []byte) error) error {
	for len(records) > 0 {
		h, err := ParseHeader(records)
		if err != nil {
			return err
		}
		if h.Size() > len(records) {
			return fmt.Errorf("%w: batch of %d bytes, %d left", ErrBadLength, h.Size(), len(records))
		}
		one := records[:h.Size()]
		if _, err := check(one); err != nil {
			return err
		}
		if err := fn(h, one); err != nil {
			return err
		}
		records = records[h.Size():]
	}
	return nil
}

// RebaseEmpty returns a copy of the empty batch b (no records: a filler the cleaner
// left for a run of removed batches) starting at base instead, ending where b ends, its
// CRC redone. base must lie within b's offsets.
func RebaseEmpty(b []byte, base int64) []byte {
	h, _ := ParseHeader(b)
	c := append([]byte(nil), b...)
	SetBaseOffset(c, base)
	binary.BigEndian.PutUint32(c[23:], uint32(h.NextOffset()-1-base))
	binary.BigEndian.PutUint32(c[17:], ComputeCRC(c))
	return c
}

// SetBaseOffset rewrites the base offset in place. The CRC does not cover it.
func SetBaseOffset(b []byte, off int64) { binary.BigEndian.PutUint64(b[0:], uint64(off)) }

// SetLeaderEpoch rewrites the partition leader epoch in place. The CRC does not cover it.
func SetLeaderEpoch(b []byte, epoch int32) { binary.BigEndian.PutUint32(b[12:], uint32(epoch)) }

// SetLogAppendTime stamps the batch with the broker's time: it sets the timestamp-type
// attribute and the max timestamp, then recomputes the CRC, as Kafka does for topics with
// message.timestamp.type=LogAppendTime.
func SetLogAppendTime(b []byte, ms int64) {
	attrs := binary.BigEndian.Uint16(b[21:]) | AttrLogAppendTime
	binary.BigEndian.PutUint16(b[21:], attrs)
	binary.BigEndian.PutUint64(b[35:], uint64(ms))
	binary.BigEndian.PutUint32(b[17:], ComputeCRC(b))
}

// SetMaxTimestamp rewrites the max timestamp and recomputes the CRC, as Kafka does when
// a CreateTime batch's header disagrees with its records.
func SetMaxTimestamp(b []byte, ms int64) {
	binary.BigEndian.PutUint64(b[35:], uint64(ms))
	binary.BigEndian.PutUint32(b[17:], ComputeCRC(b))
}
