package batch

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// KV is one record's key and value, for building and reading uncompressed batches.
type KV struct {
	Key   []byte
	Value []byte
}

// Producer identifies an idempotent producer's batch. The zero value is not valid; use
// NoProducer for a plain producer.
type Producer struct {
	ID           int64
	Epoch        int16
	BaseSequence int32
}

// NoProducer marks a batch from a non-idempotent producer.
var NoProducer = Producer{ID: -1, Epoch: -1, BaseSequence: -1}

// Build encodes an uncompressed v2 batch of the given records with base offset 0, the
// given producer fields and every record stamped at timestampMs. The simulator's
// clients and the tests use it; real clients build their own.
func Build(records []KV, p Producer, timestampMs int64) []byte {
	if len(records) == 0 {
		panic("batch.Build: a batch holds at least one record")
	}
	var body []byte
	for i, kv := range records {
		r := kmsg.Record{OffsetDelta: int32(i), Key: kv.Key, Value: kv.Value}
		if kv.Key == nil {
			r.Key = nil
		}
		enc := r.AppendTo(nil)
		// Record.Length is everything after the length varint; encode once to learn it.
		r.Length = int32(len(enc) - 1)
		enc = r.AppendTo(nil)
		for varintLen(r.Length) != len(enc)-int(r.Length) {
			r.Length = int32(len(enc) - varintLen(r.Length))
			enc = r.AppendTo(nil)
		}
		body = append(body, enc...)
	}
	rb := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(len(records) - 1),
		FirstTimestamp:       timestampMs,
		MaxTimestamp:         timestampMs,
		ProducerID:           p.ID,
		ProducerEpoch:        p.Epoch,
		FirstSequence:        p.BaseSequence,
		NumRecords:           int32(len(records)),
		Records:              body,
	}
	rb.Length = int32(HeaderSize - lengthPrefix + len(body))
	b := rb.AppendTo(nil)
	crc := ComputeCRC(b)
	b[17], b[18], b[19], b[20] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
	return b
}

func varintLen(v int32) int {
	u := uint32(v<<1) ^ uint32(v>>31)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// Records decodes the records of one uncompressed batch. It returns an error for a
// compressed batch: the broker never needs to look inside those.
func Records(b []byte) ([]KV, error) { return records(b, Check) }

// StoredRecords is Records for a batch a log holds, checked with CheckStored: a batch of
// a compacted log may have fewer records than its offsets (thinned by the cleaner) or
// none (emptied).
func StoredRecords(b []byte) ([]KV, error) { return records(b, CheckStored) }

func records(b []byte, check func([]byte) (Header, error)) ([]KV, error) {
	h, err := check(b)
	if err != nil {
		return nil, err
	}
	if h.Compression() != CompressionNone {
		return nil, fmt.Errorf("batch: records of a compressed batch (codec %d)", h.Compression())
	}
	rest := b[HeaderSize:]
	out := make([]KV, 0, h.RecordCount)
	for i := int32(0); i < h.RecordCount; i++ {
		var r kmsg.Record
		n, length := uvarint(rest)
		if n <= 0 || int(length) < 0 || n+int(length) > len(rest) {
			return nil, fmt.Errorf("%w: record %d truncated", ErrBadLength, i)
		}
		if err := r.ReadFrom(rest[:n+int(length)]); err != nil {
			return nil, fmt.Errorf("batch: record %d: %w", i, err)
		}
		out = append(out, KV{Key: r.Key, Value: r.Value})
		rest = rest[n+int(length):]
	}
	return out, nil
}

// uvarint decodes a zig-zag varint and returns (bytes used, value).
func uvarint(b []byte) (int, int64) {
	var u uint64
	for i := 0; i < len(b) && i < 5; i++ {
		u |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return i + 1, int64(u>>1) ^ -int64(u&1)
		}
	}
	return 0, 0
}
