package batch

import (
	"errors"
	"fmt"
)

// Decompressor inflates the records section of a compressed batch (everything after
// the 61-byte header). codec is one of the Compression* constants. The result must not
// exceed limit bytes: an implementation stops and returns an error wrapping
// ErrDecompressedTooLarge instead, so a small batch that inflates to gigabytes (a zip
// bomb) costs at most limit bytes of memory. core/ cannot link compression libraries
// that bring in goroutines and pools, so the node injects an implementation (package
// compress at the top of the module).
type Decompressor interface {
	Decompress(codec int8, src []byte, limit int) ([]byte, error)
}

// MaxDecompressedBytes is the default bound on a batch's decompressed records section.
// Producers cap a batch's compressed size at max.message.bytes; Kafka ratios above 100×
// are rare, so 128 MiB answers any real batch while still bounding a hostile one.
const MaxDecompressedBytes = 128 << 20

// Errors of the record walk.
var (
	// ErrDecompressedTooLarge: the records section inflates beyond the limit given.
	ErrDecompressedTooLarge = errors.New("batch: decompressed records exceed the limit")
	// ErrNoDecompressor: a compressed batch was walked without a Decompressor.
	ErrNoDecompressor = errors.New("batch: no decompressor for a compressed batch")
	// ErrBadRecord: a record inside the batch does not parse.
	ErrBadRecord = errors.New("batch: malformed record")
)

// RecordTime is one record's absolute offset and timestamp.
type RecordTime struct {
	Offset    int64
	Timestamp int64
}

// WalkTimestamps calls fn with the offset and timestamp of each record of the single
// batch b, in offset order, until fn returns false. A record's timestamp is the batch's
// base timestamp plus the record's delta (CreateTime), or the batch's max timestamp for
// every record when the batch carries LogAppendTime (attribute bit 3), as in Kafka.
// Compressed batches are inflated with dec, at most limit bytes. Bad input returns an
// error, never panics.
func WalkTimestamps(b []byte, dec Decompressor, limit int, fn func(RecordTime) bool) error {
	h, err := Check(b)
	if err != nil {
		return err
	}
	body := b[HeaderSize:]
	if c := h.Compression(); c != CompressionNone {
		if dec == nil {
			return ErrNoDecompressor
		}
		if body, err = dec.Decompress(int8(c), body, limit); err != nil {
			return fmt.Errorf("batch at %d, codec %d: %w", h.BaseOffset, c, err)
		}
		if len(body) > limit {
			return fmt.Errorf("batch at %d: %w", h.BaseOffset, ErrDecompressedTooLarge)
		}
	}
	logAppend := h.Attributes&AttrLogAppendTime != 0
	for i := int32(0); i < h.RecordCount; i++ {
		tsDelta, offDelta, n, err := recordTimes(body)
		if err != nil {
			return fmt.Errorf("batch at %d, record %d: %w", h.BaseOffset, i, err)
		}
		body = body[n:]
		if offDelta > h.LastOffsetDelta {
			return fmt.Errorf("batch at %d, record %d: %w: offset delta %d past the batch",
				h.BaseOffset, i, ErrBadRecord, offDelta)
		}
		rt := RecordTime{Offset: h.BaseOffset + int64(offDelta),
			Timestamp: h.BaseTimestamp + tsDelta}
		if logAppend {
			rt.Timestamp = h.MaxTimestamp
		}
		if !fn(rt) {
			return nil
		}
	}
	return nil
}

// recordTimes reads one record's timestamp and offset deltas and returns the number of
// bytes the whole record takes. Layout: length varint, attributes int8, timestampDelta
// varlong, offsetDelta varint, then key, value and headers, which are skipped.
func recordTimes(b []byte) (tsDelta int64, offDelta int32, size int, err error) {
	n, length := varlong(b, 5)
	if n <= 0 || length < 0 || int64(len(b)-n) < length {
		return 0, 0, 0, fmt.Errorf("%w: length", ErrBadRecord)
	}
	rec := b[n : n+int(length)]
	if len(rec) < 1 {
		return 0, 0, 0, fmt.Errorf("%w: no attributes", ErrBadRecord)
	}
	rec = rec[1:] // attributes: unused in v2
	m, ts := varlong(rec, 10)
	if m <= 0 {
		return 0, 0, 0, fmt.Errorf("%w: timestamp delta", ErrBadRecord)
	}
	k, off := varlong(rec[m:], 5)
	if k <= 0 || off < 0 || off > 1<<31-1 {
		return 0, 0, 0, fmt.Errorf("%w: offset delta", ErrBadRecord)
	}
	return ts, int32(off), n + int(length), nil
}

// varlong decodes a zig-zag varint of at most maxBytes bytes and returns (bytes used,
// value); bytes used is 0 when b ends first or the varint is longer.
func varlong(b []byte, maxBytes int) (int, int64) {
	var u uint64
	for i := 0; i < len(b) && i < maxBytes; i++ {
		u |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return i + 1, int64(u>>1) ^ -int64(u&1)
		}
	}
	return 0, 0
}
