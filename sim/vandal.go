package sim

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/batch"
)

// vandal produces batches that are malformed inside yet pass every header check (exact
// length, CRC-32C, record count matching lastOffsetDelta), the way a buggy client
// library or a hostile one would. The broker must refuse each (CORRUPT_MESSAGE or
// INVALID_RECORD); accepting one is an anomaly at once, and any reader that fetches it
// fails the strict decode (decode.go) too.
type vandal struct {
	clientBase
	spec     VandalSpec
	num      int
	parts    int32
	metaBusy bool
	busyReq  bool
	draining bool
	sent     int
}

func newVandal(w *World, actor int32, num int, spec VandalSpec) *vandal {
	v := &vandal{spec: spec, num: num}
	v.clientBase = newClientBase(w, actor, fmt.Sprintf("vandal%d", num), v.pump)
	return v
}

func (v *vandal) start() { v.wakeIn(v.rnd.Between(0, 200) * ms) }
func (v *vandal) heal()  { v.draining = true }

// busy holds the final read back while a batch is in flight (one may be accepted).
func (v *vandal) busy() string {
	if v.busyReq {
		return v.name + " has a batch in flight"
	}
	return ""
}

func (v *vandal) pump() {
	if v.draining || v.backingOff() || v.busyReq {
		return
	}
	if v.parts == 0 {
		if !v.metaBusy {
			v.metaBusy = true
			v.requestMetadata([]string{v.spec.Topic}, v.spec.TimeoutMs,
				func(counts map[string]int32, err error) {
					v.metaBusy = false
					v.parts = counts[v.spec.Topic]
					v.wakeIn(v.spec.EveryMs * ms)
				})
		}
		return
	}
	v.produce()
}

func (v *vandal) produce() {
	kind := malformKind(v.rnd.Intn(int(numMalformKinds)))
	if v.spec.BadCRCChance > 0 && v.rnd.Chance(v.spec.BadCRCChance) {
		kind = malformBadCRC
	}
	part := int32(v.rnd.Intn(int(v.parts)))
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = v.spec.Acks, int32(v.spec.TimeoutMs)
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = v.spec.Topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = part
	if kind == malformBadCRC {
		rp.Records = badCRCBatch(v.rnd, (epochNs+v.w.now)/ms)
	} else {
		rp.Records = malformedBatch(v.rnd, kind, (epochNs+v.w.now)/ms)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	v.busyReq = true
	v.sent++
	v.send(req, v.spec.TimeoutMs, func(r kmsg.Response, err error) {
		v.busyReq = false
		if err == nil {
			v.answered(kind, part, r.(*kmsg.ProduceResponse))
		}
		v.wakeIn(v.rnd.Exp(ms, v.spec.EveryMs*ms))
	})
}

// answered checks the broker refused the malformed batch. Errors that say nothing
// about the batch (unknown topic, storage errors, timeouts) are neither a pass nor a
// failure; the topic's partition count is looked up again after those.
func (v *vandal) answered(kind malformKind, part int32, resp *kmsg.ProduceResponse) {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			v.code("produce", p.ErrorCode)
			v.w.tr.note("vandal", int64(kind), int64(p.ErrorCode), p.BaseOffset)
			switch p.ErrorCode {
			case 0:
				v.w.fail("anomaly", "malformed-accepted %s: a malformed batch (%s) was "+
					"accepted by %s-%d at offset %d", v.name, kind, t.Topic, part, p.BaseOffset)
			case kerr.CorruptMessage.Code:
			case kerr.InvalidRecord.Code:
				if kind == malformBadCRC {
					v.w.fail("anomaly", "malformed-accepted %s: a batch with a wrong CRC to "+
						"%s-%d was refused with INVALID_RECORD, not CORRUPT_MESSAGE: its "+
						"records were looked at before its checksum", v.name, t.Topic, part)
				}
			case kerr.UnknownTopicOrPartition.Code:
				v.parts = 0
			}
		}
	}
}

// malformKind names one way a batch can be wrong inside while its header is right.
type malformKind uint8

const (
	malformFewerRecords  malformKind = iota // the header counts more records than there are
	malformNotCompressed                    // flagged gzip, the payload is plain records
	malformValueOverrun                     // a value's length runs past the batch's end
	malformDeltaOrder                       // offset deltas out of order (1, 0)
	malformTrailing                         // bytes after the last record
	malformHeaderOverrun                    // a record claims headers it does not hold
	malformLengthLong                       // a record's length claims more than its fields
	numMalformKinds
	// malformBadCRC: well-formed records under a CRC that does not match them (drawn
	// apart from the kinds above, with VandalSpec.BadCRCChance).
	malformBadCRC malformKind = 100
)

func (k malformKind) String() string {
	names := [...]string{"fewer-records", "not-compressed", "value-overrun", "delta-order",
		"trailing-bytes", "header-overrun", "length-long"}
	if int(k) < len(names) {
		return names[k]
	}
	if k == malformBadCRC {
		return "bad-crc"
	}
	return fmt.Sprintf("malform%d", k)
}

// malformedBatch builds a CRC-valid batch of the given kind with 1–5 records' worth of
// content stamped at tsMs.
func malformedBatch(r *Rand, kind malformKind, tsMs int64) []byte {
	n := 2 + r.Intn(4)
	var body []byte
	recs := func(count int) {
		for i := 0; i < count; i++ {
			body = append(body, encodeRecord(int32(i), fmt.Sprintf("k%d", i),
				fmt.Sprintf("vandal-%d", r.Intn(1<<20)))...)
		}
	}
	var attrs int16
	switch kind {
	case malformFewerRecords:
		recs(n - 1 - r.Intn(n-1))
	case malformNotCompressed:
		recs(n)
		attrs = batch.CompressionGzip
	case malformValueOverrun:
		recs(n - 1)
		body = append(body, rawRecord(int32(n-1), -1, 50+int64(r.Intn(1000)), "short", 0)...)
	case malformDeltaOrder:
		for i := 0; i < n; i++ {
			body = append(body, encodeRecord(int32((i+1)%n), "k", "v")...)
		}
	case malformTrailing:
		recs(n)
		body = append(body, make([]byte, 1+r.Intn(8))...)
	case malformHeaderOverrun:
		recs(n - 1)
		body = append(body, rawRecord(int32(n-1), -1, 1, "v", 1+int64(r.Intn(5)))...)
	case malformLengthLong:
		recs(n - 1)
		rec := encodeRecord(int32(n-1), "k", "v")
		// Grow the length prefix by the padding appended after the fields.
		pad := 1 + r.Intn(8)
		body = append(body, patchLength(rec, pad)...)
		body = append(body, make([]byte, pad)...)
	default:
		panic(fmt.Sprintf("malformedBatch: kind %d", kind))
	}
	return assembleBatch(body, int32(n), attrs, tsMs)
}

// encodeRecord is a well-formed record: no headers, timestamp delta 0.
func encodeRecord(delta int32, key, value string) []byte {
	return rawRecord(delta, int64(len(key)), int64(len(value)), key+value, 0)
}

// rawRecord encodes a record's fields as given, even inconsistent ones: keyLen and
// valLen are written as varints and payload follows them, then a header count. The
// length prefix covers exactly the bytes written.
func rawRecord(delta int32, keyLen, valLen int64, payload string, headers int64) []byte {
	f := []byte{0}                // attributes
	f = binary.AppendVarint(f, 0) // timestamp delta
	f = binary.AppendVarint(f, int64(delta))
	f = binary.AppendVarint(f, keyLen)
	if keyLen > 0 {
		f = append(f, payload[:keyLen]...)
		payload = payload[keyLen:]
	}
	f = binary.AppendVarint(f, valLen)
	f = append(f, payload...)
	f = binary.AppendVarint(f, headers)
	return append(binary.AppendVarint(nil, int64(len(f))), f...)
}

// patchLength re-encodes rec's length prefix pad bytes larger.
func patchLength(rec []byte, pad int) []byte {
	length, n := binary.Varint(rec)
	return append(binary.AppendVarint(nil, length+int64(pad)), rec[n:]...)
}

// assembleBatch wraps a records section in a v2 header claiming count records and
// fixes up the length and CRC, so that only the records themselves are wrong.
func assembleBatch(body []byte, count int32, attrs int16, tsMs int64) []byte {
	rb := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, Attributes: attrs,
		LastOffsetDelta: count - 1, FirstTimestamp: tsMs, MaxTimestamp: tsMs,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: count,
		Records: body}
	rb.Length = int32(batch.HeaderSize - 12 + len(body))
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[17:], batch.ComputeCRC(b))
	return b
}

// badCRCBatch builds a batch of 1–5 well-formed records whose CRC-32C field does not
// match its bytes, as a client with a broken checksum routine, or a bit flipped on the
// way, would send. The broker must refuse it with CORRUPT_MESSAGE and store nothing.
func badCRCBatch(r *Rand, tsMs int64) []byte {
	n := 1 + r.Intn(5)
	var body []byte
	for i := 0; i < n; i++ {
		body = append(body, encodeRecord(int32(i), fmt.Sprintf("k%d", i),
			fmt.Sprintf("vandal-%d", r.Intn(1<<20)))...)
	}
	b := assembleBatch(body, int32(n), 0, tsMs)
	crc := binary.BigEndian.Uint32(b[17:])
	binary.BigEndian.PutUint32(b[17:], crc^uint32(1+r.Intn(1<<16))<<uint(r.Intn(16)))
	return b
}
