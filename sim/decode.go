package sim

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/compress"
	"github.com/sluicemq/sluice/core/batch"
)

// decodeMaxBytes bounds what one fetched batch may inflate to in the checker.
const decodeMaxBytes = 64 << 20

// strictRecords decodes one whole batch the way a Kafka client does, with franz-go's
// decoders rather than the broker's own code, and insists on everything a client relies
// on: the header's record count is the number of records, offset deltas run 0, 1, 2 …
// up to lastOffsetDelta, every record's length covers exactly its fields, and the
// records fill the batch (or its inflated payload) to the last byte. A batch the broker
// accepted that fails here is one a real consumer would choke on.
func strictRecords(raw []byte) ([]batch.KV, error) {
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(raw); err != nil {
		return nil, fmt.Errorf("franz-go cannot decode the batch header: %w", err)
	}
	body := rb.Records
	if codec := int8(rb.Attributes & batch.AttrCompressionMask); codec != 0 {
		var err error
		if body, err = (compress.Codecs{}).Decompress(codec, body, decodeMaxBytes); err != nil {
			return nil, fmt.Errorf("records do not inflate (codec %d): %w", codec, err)
		}
	}
	if rb.NumRecords < 0 || int64(rb.NumRecords) > int64(len(body)) {
		return nil, fmt.Errorf("record count %d for %d bytes of records", rb.NumRecords,
			len(body))
	}
	if rb.LastOffsetDelta != rb.NumRecords-1 {
		return nil, fmt.Errorf("lastOffsetDelta %d with %d records", rb.LastOffsetDelta,
			rb.NumRecords)
	}
	out := make([]batch.KV, 0, rb.NumRecords)
	for i := int32(0); i < rb.NumRecords; i++ {
		length, n := binary.Varint(body)
		if n <= 0 || length < 0 || int64(n)+length > int64(len(body)) {
			return nil, fmt.Errorf("record %d of %d: length runs past the batch", i,
				rb.NumRecords)
		}
		one := body[:n+int(length)]
		var r kmsg.Record
		if err := r.ReadFrom(one); err != nil {
			return nil, fmt.Errorf("record %d of %d: %w", i, rb.NumRecords, err)
		}
		if fields := fieldBytes(&r); fields != int(r.Length) {
			return nil, fmt.Errorf("record %d of %d: length says %d bytes, fields take %d", i,
				rb.NumRecords, r.Length, fields)
		}
		if r.OffsetDelta != i {
			return nil, fmt.Errorf("record %d has offset delta %d", i, r.OffsetDelta)
		}
		out = append(out, batch.KV{Key: r.Key, Value: r.Value})
		body = body[len(one):]
	}
	if len(body) != 0 {
		return nil, fmt.Errorf("%d bytes after the last of %d records", len(body), rb.NumRecords)
	}
	return out, nil
}

// fieldBytes is the size of r's fields after its length prefix as franz-go encodes
// them: a record whose fields take fewer bytes than its length claims hides bytes no
// client reads.
func fieldBytes(r *kmsg.Record) int {
	return len(r.AppendTo(nil)) - varintSize(int64(r.Length))
}

func varintSize(v int64) int {
	var buf [binary.MaxVarintLen64]byte
	return binary.PutVarint(buf[:], v)
}
