package batch

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TimedKV is a record with its own timestamp, for BuildTimed.
type TimedKV struct {
	Key, Value  []byte
	TimestampMs int64
}

// BuildTimed encodes a v2 batch (base offset 0, no producer) whose records carry their
// own timestamps: the batch's base timestamp is the first record's, its max timestamp
// the largest. With codec != CompressionNone, compress turns the encoded records into
// that codec's bytes. Tests and simulated clients use it to build what real producers
// send; the broker itself never builds batches.
func BuildTimed(records []TimedKV, codec int, compress func([]byte) ([]byte, error)) ([]byte, error) {
	if len(records) == 0 {
		return nil, fmt.Errorf("batch.BuildTimed: a batch holds at least one record")
	}
	base, maxTs := records[0].TimestampMs, records[0].TimestampMs
	var body []byte
	for i, kv := range records {
		maxTs = max(maxTs, kv.TimestampMs)
		r := kmsg.Record{OffsetDelta: int32(i), TimestampDelta64: kv.TimestampMs - base,
			Key: kv.Key, Value: kv.Value}
		body = append(body, encodeRecord(r)...)
	}
	if codec != CompressionNone {
		var err error
		if body, err = compress(body); err != nil {
			return nil, fmt.Errorf("batch.BuildTimed: compress: %w", err)
		}
	}
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           int16(codec & AttrCompressionMask),
		LastOffsetDelta:      int32(len(records) - 1),
		FirstTimestamp:       base,
		MaxTimestamp:         maxTs,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(records)),
		Records:              body,
	}
	rb.Length = int32(HeaderSize - lengthPrefix + len(body))
	b := rb.AppendTo(nil)
	crc := ComputeCRC(b)
	b[17], b[18], b[19], b[20] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
	return b, nil
}

// encodeRecord encodes r with its length prefix filled in. Record.Length is everything
// after the length varint, whose own size depends on it: encode until it settles.
func encodeRecord(r kmsg.Record) []byte {
	enc := r.AppendTo(nil)
	r.Length = int32(len(enc) - 1)
	enc = r.AppendTo(nil)
	for varintLen(r.Length) != len(enc)-int(r.Length) {
		r.Length = int32(len(enc) - varintLen(r.Length))
		enc = r.AppendTo(nil)
	}
	return enc
}
