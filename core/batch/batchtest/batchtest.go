package batchtest

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/batch"
)

// Case is one malformed batch and the error code the broker must refuse it with.
type Case struct {
	Name  string
	Batch []byte
	Code  int16
	// PerRecord: the refusal names the records at fault (Produce v8+ record errors).
	PerRecord bool
}

// Header holds the header fields a case may set; Assemble fills the rest.
type Header struct {
	Attributes      int16
	LastOffsetDelta int32
	BaseTimestamp   int64
	MaxTimestamp    int64
	ProducerID      int64
	BaseSequence    int32
	RecordCount     int32
}

// Plain is the header of an uncompressed batch of n records stamped at ts, with no
// producer.
func Plain(n int32, ts int64) Header {
	return Header{LastOffsetDelta: n - 1, BaseTimestamp: ts, MaxTimestamp: ts,
		ProducerID: -1, BaseSequence: -1, RecordCount: n}
}

// Assemble encodes a v2 batch of header h around the records section body (taken as
// is: already compressed, or deliberately broken) with a correct length and CRC.
func Assemble(h Header, body []byte) []byte {
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, Attributes: h.Attributes,
		LastOffsetDelta: h.LastOffsetDelta, FirstTimestamp: h.BaseTimestamp,
		MaxTimestamp: h.MaxTimestamp, ProducerID: h.ProducerID, ProducerEpoch: -1,
		FirstSequence: h.BaseSequence, NumRecords: h.RecordCount, Records: body,
	}
	if h.ProducerID >= 0 {
		rb.ProducerEpoch = 0
	}
	rb.Length = int32(batch.HeaderSize - 12 + len(body))
	b := rb.AppendTo(nil)
	FixCRC(b)
	return b
}

// FixCRC rewrites b's length field to match len(b) and recomputes its CRC-32C, so a
// mutated batch gets past the header checks to the records.
func FixCRC(b []byte) {
	if len(b) < batch.HeaderSize {
		return
	}
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], batch.ComputeCRC(b))
}

// Record encodes one record (length prefix computed) with offset delta off, timestamp
// delta tsDelta and value v.
func Record(off int32, tsDelta int64, v []byte) []byte {
	return Encode(kmsg.Record{OffsetDelta: off, TimestampDelta64: tsDelta, Value: v})
}

// Encode encodes r with its length prefix filled in.
func Encode(r kmsg.Record) []byte {
	body := r
	body.Length = 0
	enc := body.AppendTo(nil)
	n := len(enc) - 1 // everything after a one-byte zero length
	return append(appendVarint(nil, int64(n)), enc[1:]...)
}

// Records encodes n good records, offset deltas 0..n-1, timestamp deltas 0.
func Records(n int) []byte {
	var out []byte
	for i := 0; i < n; i++ {
		out = append(out, Record(int32(i), 0, []byte("value"))...)
	}
	return out
}

func appendVarint(dst []byte, v int64) []byte {
	return binary.AppendUvarint(dst, uint64(v<<1)^uint64(v>>63))
}

// Malformed returns every kind of malformed but CRC-valid batch the broker must
// refuse, for a topic with Kafka's default timestamp settings and a broker clock at
// nowMs. Each has a correct length and CRC-32C.
func Malformed(nowMs int64) []Case {
	inv, ts := kerr.InvalidRecord.Code, kerr.InvalidTimestamp.Code
	gz := Plain(2, nowMs)
	gz.Attributes = batch.CompressionGzip
	lat := Plain(1, nowMs)
	lat.Attributes = batch.AttrLogAppendTime
	ctl := Plain(1, nowMs)
	ctl.Attributes = batch.AttrControl
	seq := Plain(1, nowMs)
	seq.ProducerID = 7
	return []Case{
		// Header says 5 records (lastOffsetDelta 4); only 2 are there.
		{"phantom records", Assemble(Plain(5, nowMs), Records(2)), inv, true},
		// Gzip-flagged, but the records are plain.
		{"gzip flag without gzip", Assemble(gz, Records(2)), inv, false},
		{"value past the batch end", Assemble(Plain(1, nowMs), valuePastEnd()), inv, true},
		{"offset deltas 3, 0", Assemble(Plain(2, nowMs),
			append(Record(3, 0, []byte("a")), Record(0, 0, []byte("b"))...)), inv, true},
		{"offset deltas 0, 0", Assemble(Plain(2, nowMs),
			append(Record(0, 0, []byte("a")), Record(0, 0, []byte("b"))...)), inv, true},
		{"trailing bytes", Assemble(Plain(1, nowMs), append(Records(1), 0, 0, 0)), inv, false},
		{"more records than the count", Assemble(Plain(1, nowMs), Records(2)), inv, false},
		{"negative header count", Assemble(Plain(1, nowMs), rawRecord(0, -3)), inv, true},
		{"null header key", Assemble(Plain(1, nowMs), nullHeaderKey()), inv, true},
		{"record length not a varint", Assemble(Plain(1, nowMs),
			[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0}), inv, true},
		{"record length zero", Assemble(Plain(1, nowMs), []byte{0}), inv, true},
		{"key length -2", Assemble(Plain(1, nowMs), rawRecord(-2, 0)), inv, true},
		{"empty records section", Assemble(Plain(1, nowMs), nil), inv, true},
		{"control batch from a client", Assemble(ctl, Records(1)), inv, false},
		{"idempotent without a sequence", Assemble(seq, Records(1)), inv, false},
		// Two hours ahead: message.timestamp.after.max.ms is one hour.
		{"timestamp two hours ahead", Assemble(Plain(2, nowMs),
			append(Record(0, 0, nil), Record(1, 2*3600_000, nil)...)), ts, true},
		{"LogAppendTime set by the producer", Assemble(lat, Records(1)), ts, false},
	}
}

// valuePastEnd is a record whose value length (1000) runs past the record and the
// batch.
func valuePastEnd() []byte {
	body := []byte{0, 0, 0, 1} // attributes, tsDelta 0, offDelta 0, key length -1
	body = appendVarint(body, 1000)
	body = append(body, "short"...)
	return append(appendVarint(nil, int64(len(body))), body...)
}

// rawRecord is a record with offset delta 0, the given key length (no key bytes follow
// for a negative one) and header count, and nothing else.
func rawRecord(keyLen, headers int64) []byte {
	body := []byte{0, 0, 0}
	body = appendVarint(body, keyLen)
	body = appendVarint(body, -1) // null value
	body = appendVarint(body, headers)
	return append(appendVarint(nil, int64(len(body))), body...)
}

// nullHeaderKey is a record with one header whose key length is -1.
func nullHeaderKey() []byte {
	body := []byte{0, 0, 0, 1, 1} // null key, null value
	body = appendVarint(body, 1)
	body = appendVarint(body, -1) // header key: null
	body = appendVarint(body, -1) // header value: null
	return append(appendVarint(nil, int64(len(body))), body...)
}
