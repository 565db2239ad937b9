package sim

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/compress"
	"github.com/sluicemq/sluice/core/batch"
)

// recordTimes returns the timestamp of each record of one whole batch the way a Kafka
// client computes it (franz-go's decoders, not the broker's): the batch's max timestamp
// for every record under LogAppendTime, else the first timestamp plus the record's
// delta. The batch passed strictRecords already; nil when it cannot be read again.
// The checkers of ListOffsets by time (linearizability/timelookups.go) compare answers
// with these.
func recordTimes(raw []byte) []int64 {
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(raw); err != nil || rb.NumRecords <= 0 {
		return nil
	}
	out := make([]int64, 0, rb.NumRecords)
	if rb.Attributes&batch.AttrLogAppendTime != 0 {
		for i := int32(0); i < rb.NumRecords; i++ {
			out = append(out, rb.MaxTimestamp)
		}
		return out
	}
	body := rb.Records
	if codec := int8(rb.Attributes & batch.AttrCompressionMask); codec != 0 {
		var err error
		if body, err = (compress.Codecs{}).Decompress(codec, body, decodeMaxBytes); err != nil {
			return nil
		}
	}
	for i := int32(0); i < rb.NumRecords; i++ {
		length, n := binary.Varint(body)
		if n <= 0 || length < 0 || int64(n)+length > int64(len(body)) {
			return nil
		}
		var r kmsg.Record
		if err := r.ReadFrom(body[:n+int(length)]); err != nil {
			return nil
		}
		out = append(out, rb.FirstTimestamp+r.TimestampDelta64)
		body = body[n+int(length):]
	}
	return out
}
