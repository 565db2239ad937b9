package disk

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/batch"
)

// Codec compresses and decompresses record sections for the cleaner
// (compress.Codecs).
type Codec interface {
	batch.Decompressor
	Compress(codec int8, src []byte) ([]byte, error)
}

// rawRecord is one record of a batch: its offset, key, whether its value is null, and
// its encoded bytes (length prefix included), copied unchanged into a cleaned batch.
type rawRecord struct {
	offset    int64
	key       []byte
	value     []byte
	tombstone bool
	raw       []byte
}

// batchRecords decodes the records of one stored batch (inflating it with codec when
// compressed), without copying them.
func batchRecords(b []byte, h *batch.Header, codec Codec) ([]rawRecord, error) {
	body := b[batch.HeaderSize:]
	if c := h.Compression(); c != batch.CompressionNone {
		if codec == nil {
			return nil, batch.ErrNoDecompressor
		}
		out, err := codec.Decompress(int8(c), body, batch.MaxDecompressedBytes)
		if err != nil {
			return nil, fmt.Errorf("inflate batch at %d: %w", h.BaseOffset, err)
		}
		body = out
	}
	recs := make([]rawRecord, 0, h.RecordCount)
	for i := int32(0); i < h.RecordCount; i++ {
		n, length := uvarint(body)
		if n <= 0 || length < 0 || n+int(length) > len(body) {
			return nil, fmt.Errorf("batch at %d: record %d truncated", h.BaseOffset, i)
		}
		raw := body[:n+int(length)]
		var r kmsg.Record
		if err := r.ReadFrom(raw); err != nil {
			return nil, fmt.Errorf("batch at %d: record %d: %w", h.BaseOffset, i, err)
		}
		recs = append(recs, rawRecord{offset: h.BaseOffset + int64(r.OffsetDelta),
			key: r.Key, value: r.Value, tombstone: r.Value == nil, raw: raw})
		body = body[n+int(length):]
	}
	return recs, nil
}

// uvarint decodes a zig-zag varint: (bytes used, value); n <= 0 when invalid.
func uvarint(b []byte) (int, int64) {
	v, n := binary.Varint(b)
	if n > 5 {
		return 0, 0
	}
	return n, v
}

// rebuildBatch encodes a batch with h's header fields (base offset, lastOffsetDelta,
// timestamps, producer, epoch, attributes) around the given records, compressed with
// the batch's codec. An empty batch is written uncompressed: it keeps only offsets and
// producer state, as the batches Kafka's cleaner retains for idempotent producers.
func rebuildBatch(h *batch.Header, recs []rawRecord, codec Codec) ([]byte, error) {
	var body []byte
	for _, r := range recs {
		body = append(body, r.raw...)
	}
	attrs := h.Attributes
	if len(recs) == 0 {
		attrs &^= batch.AttrCompressionMask
	} else if c := h.Compression(); c != batch.CompressionNone {
		var err error
		if body, err = codec.Compress(int8(c), body); err != nil {
			return nil, fmt.Errorf("recompress batch at %d: %w", h.BaseOffset, err)
		}
	}
	return encodeBatch(h, attrs, int32(len(recs)), body), nil
}

// encodeBatch writes a v2 batch header for h with the given attributes and record
// count around body, with its CRC.
func encodeBatch(h *batch.Header, attrs int16, count int32, body []byte) []byte {
	b := make([]byte, batch.HeaderSize+len(body))
	binary.BigEndian.PutUint64(b[0:], uint64(h.BaseOffset))
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[12:], uint32(h.PartitionLeaderEpoch))
	b[16] = 2
	binary.BigEndian.PutUint16(b[21:], uint16(attrs))
	binary.BigEndian.PutUint32(b[23:], uint32(h.LastOffsetDelta))
	binary.BigEndian.PutUint64(b[27:], uint64(h.BaseTimestamp))
	binary.BigEndian.PutUint64(b[35:], uint64(h.MaxTimestamp))
	binary.BigEndian.PutUint64(b[43:], uint64(h.ProducerID))
	binary.BigEndian.PutUint16(b[51:], uint16(h.ProducerEpoch))
	binary.BigEndian.PutUint32(b[53:], uint32(h.BaseSequence))
	binary.BigEndian.PutUint32(b[57:], uint32(count))
	copy(b[batch.HeaderSize:], body)
	binary.BigEndian.PutUint32(b[17:], batch.ComputeCRC(b))
	return b
}

// filler is a run of consecutive batches the cleaner emptied, of one leader epoch,
// written as one empty batch spanning their offsets so that the offsets chain of the
// segment stays dense (every batch starts where the previous one ended): recovery,
// reads and followers rely on it. It carries no producer, and the earliest base and the
// largest max timestamp of the batches it replaces, so the segment's time index and
// max timestamp do not change.
type filler struct {
	on bool
	h  batch.Header
}

// add extends the run with the emptied batch h, or reports false when h cannot join
// it (another epoch).
func (f *filler) add(h *batch.Header) bool {
	if !f.on {
		f.on = true
		f.h = batch.Header{BaseOffset: h.BaseOffset, PartitionLeaderEpoch: h.PartitionLeaderEpoch,
			BaseTimestamp: h.BaseTimestamp, MaxTimestamp: h.MaxTimestamp,
			ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
		f.h.LastOffsetDelta = int32(h.NextOffset() - 1 - f.h.BaseOffset)
		return true
	}
	if h.PartitionLeaderEpoch != f.h.PartitionLeaderEpoch {
		return false
	}
	f.h.LastOffsetDelta = int32(h.NextOffset() - 1 - f.h.BaseOffset)
	f.h.MaxTimestamp = max(f.h.MaxTimestamp, h.MaxTimestamp)
	return true
}

// take returns the run's batch and ends the run (nil when there is none).
func (f *filler) take() []byte {
	if !f.on {
		return nil
	}
	f.on = false
	return encodeBatch(&f.h, 0, 0, nil)
}
