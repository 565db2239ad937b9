package batch

import (
	"errors"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Record-level validation of a produced batch, as Kafka's log validator does it: every
// record is decoded (in place, nothing copied; a compressed batch is inflated first,
// bounded) and must be well framed, numbered 0, 1, 2, ... and carry an accepted
// timestamp, so that every batch the broker stores decodes completely for any client.

// NoTimestamp is the timestamp of a record that has none, as in Kafka.
const NoTimestamp = -1

// MaxRecordErrors bounds the per-record errors one refused batch reports.
const MaxRecordErrors = 100

// minRecordBody is the smallest record after its length varint: attributes,
// timestampDelta, offsetDelta, key length, value length and header count, one byte each.
const minRecordBody = 6

// Errors of the record walk, beyond ErrBadRecord. Each refusal from Validate or
// CheckRecords is a *RecordsError wrapping one of them, or an error of Check.
var (
	// ErrRecordCount: the records run out before the header's record count.
	ErrRecordCount = errors.New("batch: fewer records than the header's record count")
	// ErrOffsetDelta: record offset deltas are not 0, 1, 2, ... in order.
	ErrOffsetDelta = errors.New("batch: record offset deltas are not consecutive from 0")
	// ErrTrailingBytes: bytes are left after the header's count of records.
	ErrTrailingBytes = errors.New("batch: bytes left after the last record")
	// ErrInflate: the records of a compressed batch do not decompress.
	ErrInflate = errors.New("batch: compressed records do not decompress")
	// ErrTimestamp: a record's timestamp is outside message.timestamp.before.max.ms /
	// message.timestamp.after.max.ms of the broker's clock.
	ErrTimestamp = errors.New("batch: record timestamp out of the accepted range")
	// ErrLogAppendTimeFromClient: a producer set the LogAppendTime attribute, which
	// only the broker may set.
	ErrLogAppendTimeFromClient = errors.New("batch: producers may not set LogAppendTime")
	// ErrBadSequence: a batch with a producer ID has no base sequence.
	ErrBadSequence = errors.New("batch: idempotent batch without a base sequence")
	// ErrNoKey: a record without a key was produced to a compacted topic (Kafka's
	// INVALID_RECORD "Compacted topic cannot accept message without key").
	ErrNoKey = errors.New("compacted topic cannot accept message without key")
)

// Policy is what Validate checks beyond framing: the topic's timestamp settings, the
// broker's clock, and how to inflate compressed records.
type Policy struct {
	NowMs int64
	// LogAppendTime: the topic's message.timestamp.type is LogAppendTime, so the
	// broker stamps the batch and record timestamps are not checked.
	LogAppendTime bool
	// TimestampBeforeMaxMs is message.timestamp.before.max.ms: how far a CreateTime
	// record may lie in the past of NowMs. math.MaxInt64 accepts any.
	TimestampBeforeMaxMs int64
	// TimestampAfterMaxMs is message.timestamp.after.max.ms: how far in the future.
	TimestampAfterMaxMs int64
	// Decompressor inflates compressed batches; nil refuses them (ErrNoDecompressor).
	Decompressor Decompressor
	// MaxDecompressedBytes bounds a batch's inflated records; 0 means
	// MaxDecompressedBytes.
	MaxDecompressedBytes int
	// RequireKey refuses a record with a null key (ErrNoKey): the topic is compacted
	// (cleanup.policy includes compact), and the cleaner keeps records by key.
	RequireKey bool
}

// Summary describes a batch that passed validation.
type Summary struct {
	Header Header
	// MaxTimestamp is the largest record timestamp (base timestamp plus delta), or
	// NoTimestamp. For a CreateTime topic the batch's header should carry it; Kafka
	// rewrites the header's max timestamp to this value, and so does Sluice.
	MaxTimestamp int64
	// RecordsBytes is the size of the records section, after inflating.
	RecordsBytes int
}

// RecordError is one record at fault: its index in the batch and why.
type RecordError struct {
	Index   int32
	Message string
}

// RecordsError refuses a batch whose records are wrong. Err is one of this package's
// sentinel errors (errors.Is works on a *RecordsError); Records lists the records at
// fault, at most MaxRecordErrors of Faulty, when the fault lies with particular
// records.
type RecordsError struct {
	Err     error
	Detail  string
	Records []RecordError
	Faulty  int
}

func (e *RecordsError) Error() string {
	if e.Detail == "" {
		return e.Err.Error()
	}
	return e.Err.Error() + ": " + e.Detail
}

func (e *RecordsError) Unwrap() error { return e.Err }

// add notes one more faulty record.
func (e *RecordsError) add(i int32, msg string) {
	e.Faulty++
	if len(e.Records) < MaxRecordErrors {
		e.Records = append(e.Records, RecordError{Index: i, Message: msg})
	}
}

func recordFault(err error, i int32, msg string) *RecordsError {
	e := &RecordsError{Err: err, Detail: fmt.Sprintf("record %d: %s", i, msg)}
	e.add(i, msg)
	return e
}

// Validate checks the single batch b as produced by a client: the header (Check), the
// client-only rules (no control batch, no LogAppendTime attribute, a base sequence
// with a producer ID), then every record (walkRecords) including its timestamp against
// p. It allocates nothing for a valid uncompressed batch.
func Validate(b []byte, p *Policy) (Summary, error) {
	h, err := Check(b)
	if err != nil {
		return Summary{Header: h}, err
	}
	switch {
	case h.IsControl():
		return Summary{Header: h}, &RecordsError{Err: ErrControlFromClient}
	case h.Attributes&AttrLogAppendTime != 0:
		return Summary{Header: h}, &RecordsError{Err: ErrLogAppendTimeFromClient}
	case h.HasProducer() && h.BaseSequence < 0:
		return Summary{Header: h}, &RecordsError{Err: ErrBadSequence,
			Detail: fmt.Sprintf("producer %d, base sequence %d", h.ProducerID, h.BaseSequence)}
	}
	return walkBatch(b, &h, p.Decompressor, p.MaxDecompressedBytes, p)
}

// CheckRecords checks that the single batch b, as stored, decodes completely: its
// header (Check) and the framing and numbering of every record, with no timestamp or
// client rules. A compressed batch is inflated with dec, at most limit bytes (0:
// MaxDecompressedBytes). The simulator's checker uses it on what the broker accepted.
func CheckRecords(b []byte, dec Decompressor, limit int) (Summary, error) {
	h, err := Check(b)
	if err != nil {
		return Summary{Header: h}, err
	}
	return walkBatch(b, &h, dec, limit, nil)
}

// walkBatch inflates the records section of b if it is compressed and walks it.
func walkBatch(b []byte, h *Header, dec Decompressor, limit int, p *Policy) (Summary, error) {
	s := Summary{Header: *h, MaxTimestamp: NoTimestamp}
	if limit <= 0 {
		limit = MaxDecompressedBytes
	}
	body := b[HeaderSize:]
	if c := h.Compression(); c != CompressionNone {
		if dec == nil {
			return s, ErrNoDecompressor
		}
		if inf, ok := dec.(Inflater); ok {
			return walkInflated(inf, int8(c), body, limit, h, p)
		}
		out, err := dec.Decompress(int8(c), body, limit)
		switch {
		case errors.Is(err, ErrDecompressedTooLarge) || (err == nil && len(out) > limit):
			return s, fmt.Errorf("%w (%d bytes)", ErrDecompressedTooLarge, limit)
		case err != nil:
			return s, &RecordsError{Err: ErrInflate, Detail: fmt.Sprintf("codec %d: %v", c, err)}
		}
		body = out
	}
	s.RecordsBytes = len(body)
	maxTs, err := walkRecords(body, h, p)
	s.MaxTimestamp = maxTs
	return s, err
}

// walkRecords decodes the header's count of records from body, in place. Framing
// errors stop the walk; timestamp errors are gathered for every record, as Kafka
// reports them. It returns the largest record timestamp.
func walkRecords(body []byte, h *Header, p *Policy) (int64, error) {
	w := newWalk(h, p)
	for i := int32(0); i < h.RecordCount; i++ {
		if len(body) == 0 {
			if mutantOn("count-trusted") {
				return w.finish()
			}
			return w.maxTs, w.short(i)
		}
		size, tsDelta, offDelta, bad := parseRecord(body, requireKey(p))
		if bad == noKeyMessage {
			return w.maxTs, recordFault(ErrNoKey, i, bad)
		}
		if bad != "" {
			return w.maxTs, recordFault(ErrBadRecord, i, bad)
		}
		if err := w.record(i, tsDelta, offDelta); err != nil {
			return w.maxTs, err
		}
		body = body[size:]
	}
	if len(body) > 0 && !mutantOn("trailing-ok") {
		return w.maxTs, &RecordsError{Err: ErrTrailingBytes,
			Detail: fmt.Sprintf("%d bytes after record %d", len(body), h.RecordCount-1)}
	}
	return w.finish()
}

// walk holds the checks of a record walk that do not depend on where the bytes come
// from: numbering, timestamps, the largest timestamp.
type walk struct {
	base, count   int64 // the header's base timestamp and record count
	window        bool  // check timestamps against now, before and after
	now           int64
	before, after int64
	maxTs         int64
	late          *RecordsError
}

// newWalk copies what it needs from h and p (pointers kept in the walk would make
// escape analysis move the caller's header to the heap).
func newWalk(h *Header, p *Policy) walk {
	w := walk{base: h.BaseTimestamp, count: int64(h.RecordCount), maxTs: NoTimestamp}
	if p != nil && !p.LogAppendTime {
		w.window, w.now = true, p.NowMs
		w.before, w.after = p.TimestampBeforeMaxMs, p.TimestampAfterMaxMs
	}
	return w
}

// short is the error for records that end before the header's count.
func (w *walk) short(i int32) error {
	return recordFault(ErrRecordCount, i,
		fmt.Sprintf("the batch ends after %d of %d records", i, w.count))
}

// record checks record i's offset delta and timestamp.
func (w *walk) record(i int32, tsDelta int64, offDelta int32) error {
	if offDelta != i && !mutantOn("delta-unchecked") {
		return recordFault(ErrOffsetDelta, i, fmt.Sprintf("offset delta %d", offDelta))
	}
	ts := w.base + tsDelta
	w.maxTs = max(w.maxTs, ts)
	if w.window && ts != NoTimestamp && outsideWindow(ts, w.now, w.before, w.after) {
		if w.late == nil {
			w.late = &RecordsError{Err: ErrTimestamp}
		}
		w.late.add(i, fmt.Sprintf("timestamp %d is outside [%d, %d]", ts,
			satSub(w.now, w.before), satAdd(w.now, w.after)))
	}
	return nil
}

// finish returns the largest timestamp and the timestamp errors gathered, if any.
func (w *walk) finish() (int64, error) {
	if w.late == nil {
		return w.maxTs, nil
	}
	w.late.Detail = fmt.Sprintf("%d of %d records, e.g. record %d: %s", w.late.Faulty,
		w.count, w.late.Records[0].Index, w.late.Records[0].Message)
	return w.maxTs, w.late
}

// outsideWindow reports whether ts lies more than before ms behind now or more than
// after ms ahead of it. The differences are taken in uint64, where they cannot
// overflow; a bound of math.MaxInt64 (Kafka's "no limit") accepts any timestamp on its
// side.
func outsideWindow(ts, now, before, after int64) bool {
	if ts < now {
		return before != math.MaxInt64 && uint64(now)-uint64(ts) > uint64(max(before, 0))
	}
	return after != math.MaxInt64 && uint64(ts)-uint64(now) > uint64(max(after, 0))
}

func satSub(a, b int64) int64 {
	if b > 0 && a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// parseRecord decodes the record at the start of b without copying anything. Layout:
// length varint, attributes int8, timestampDelta varlong, offsetDelta varint, key and
// value (varint length, -1 for null, then the bytes), header count varint, then per
// header a key (varint length >= 0) and a value (varint length, -1 for null). The
// fields must fill the length exactly. bad is empty for a good record.
func parseRecord(b []byte, needKey bool) (size int, tsDelta int64, offDelta int32,
	bad string) {
	length, n := readVarint(b)
	switch {
	case n <= 0:
		return 0, 0, 0, "record length is not a valid varint"
	case length < minRecordBody:
		return 0, 0, 0, "record length too small"
	case int64(length) > int64(len(b)-n):
		return 0, 0, 0, "record runs past the end of the batch"
	}
	rec := b[n : n+int(length)]
	p := 1 // attributes: unused in v2
	tsDelta, k := readVarlong(rec[p:])
	if k <= 0 {
		return 0, 0, 0, "timestamp delta is not a valid varlong"
	}
	p += k
	if offDelta, k = readVarint(rec[p:]); k <= 0 {
		return 0, 0, 0, "offset delta is not a valid varint"
	}
	p += k
	if kl, k := readVarint(rec[p:]); needKey && k > 0 && kl < 0 {
		return 0, 0, 0, noKeyMessage
	}
	if p, bad = skipBytes(rec, p, -1, "key"); bad != "" {
		return 0, 0, 0, bad
	}
	if p, bad = skipBytes(rec, p, -1, "value"); bad != "" {
		return 0, 0, 0, bad
	}
	headers, k := readVarint(rec[p:])
	if k <= 0 || headers < 0 {
		return 0, 0, 0, "header count is not a valid count"
	}
	p += k
	for j := int32(0); j < headers; j++ {
		if p, bad = skipBytes(rec, p, 0, "header key"); bad != "" {
			return 0, 0, 0, bad
		}
		if p, bad = skipBytes(rec, p, -1, "header value"); bad != "" {
			return 0, 0, 0, bad
		}
	}
	if p != len(rec) {
		return 0, 0, 0, "record fields do not fill its length"
	}
	return n + int(length), tsDelta, offDelta, ""
}

// noKeyMessage is the walk's verdict on a keyless record when a key is required.
const noKeyMessage = "record has no key"

func requireKey(p *Policy) bool { return p != nil && p.RequireKey }

// skipBytes skips a varint-length-prefixed field of rec at p whose length may not be
// below minLen (-1: nullable). It returns the position after it.
func skipBytes(rec []byte, p int, minLen int32, what string) (int, string) {
	l, k := readVarint(rec[p:])
	if k <= 0 {
		return p, what + " length is not a valid varint"
	}
	if l < minLen {
		return p, what + " length is negative"
	}
	p += k
	if l > 0 {
		if int64(l) > int64(len(rec)-p) {
			return p, what + " runs past the end of the record"
		}
		p += int(l)
	}
	return p, ""
}

// readVarint decodes a zig-zag varint of at most 5 bytes, as Kafka's clients do; the
// fifth byte may carry only the top 4 bits. It returns (value, bytes used); used is 0
// when b ends first and -1 when the encoding is too long.
func readVarint(b []byte) (int32, int) {
	var x uint32
	for i := 0; i < 5; i++ {
		if i >= len(b) {
			return 0, 0
		}
		c := b[i]
		if i == 4 {
			if c > 0x0f {
				return 0, -1
			}
		} else if c >= 0x80 {
			x |= uint32(c&0x7f) << (7 * i)
			continue
		}
		x |= uint32(c) << (7 * i)
		return int32(x>>1) ^ -int32(x&1), i + 1
	}
	return 0, -1
}

// readVarlong decodes a zig-zag varlong of at most 10 bytes; the tenth byte may carry
// only the top bit. Returns as readVarint.
func readVarlong(b []byte) (int64, int) {
	var x uint64
	for i := 0; i < 10; i++ {
		if i >= len(b) {
			return 0, 0
		}
		c := b[i]
		if i == 9 {
			if c > 0x01 {
				return 0, -1
			}
		} else if c >= 0x80 {
			x |= uint64(c&0x7f) << (7 * i)
			continue
		}
		x |= uint64(c) << (7 * i)
		return int64(x>>1) ^ -int64(x&1), i + 1
	}
	return 0, -1
}

// ErrorCode maps an error of Check, Validate or CheckRecords to the Kafka error code a
// producer gets, as Kafka's broker answers: damage to the batch as a whole (length,
// CRC) is CORRUPT_MESSAGE, which clients retry; anything wrong with the records inside
// a batch whose CRC holds is INVALID_RECORD, which they do not, since a retry sends
// the same bytes; a timestamp out of range is INVALID_TIMESTAMP.
func ErrorCode(err error) int16 {
	var re *RecordsError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrUnsupportedMagic):
		return kerr.UnsupportedForMessageFormat.Code
	case errors.Is(err, ErrBadCompression), errors.Is(err, ErrNoDecompressor):
		return kerr.UnsupportedCompressionType.Code
	case errors.Is(err, ErrDecompressedTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, ErrTimestamp), errors.Is(err, ErrLogAppendTimeFromClient):
		return kerr.InvalidTimestamp.Code
	case errors.Is(err, ErrBadRecordCount), errors.As(err, &re):
		return kerr.InvalidRecord.Code
	default: // ErrTooShort, ErrBadLength, ErrCorrupt
		return kerr.CorruptMessage.Code
	}
}
