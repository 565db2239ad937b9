package batch_test

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"pgregory.net/rapid"

	"github.com/sluicemq/sluice/compress"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/batch/batchtest"
)

// genRecords draws 1-12 records as a producer might send them: keys and values null,
// empty or short, a few headers, timestamps around now.
func genRecords(t *rapid.T) []kmsg.Record {
	n := rapid.IntRange(1, 12).Draw(t, "records")
	bytesOrNil := func(label string) []byte {
		if rapid.IntRange(0, 3).Draw(t, label+" null") == 0 {
			return nil
		}
		return rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(t, label)
	}
	recs := make([]kmsg.Record, n)
	for i := range recs {
		r := kmsg.Record{OffsetDelta: int32(i), Key: bytesOrNil("key"), Value: bytesOrNil("value"),
			TimestampDelta64: rapid.Int64Range(-5000, 5000).Draw(t, "ts delta")}
		for j := rapid.IntRange(0, 2).Draw(t, "headers"); j > 0; j-- {
			r.Headers = append(r.Headers, kmsg.Header{
				Key: rapid.StringN(0, 8, -1).Draw(t, "header key"), Value: bytesOrNil("header value")})
		}
		recs[i] = r
	}
	return recs
}

// mutate applies one of the mutations a broken or hostile producer makes, keeping the
// length field and CRC right so that the batch reaches the record checks.
func mutate(t *rapid.T, b []byte, plainRecords []byte, h batchtest.Header) []byte {
	switch rapid.IntRange(0, 7).Draw(t, "mutation") {
	case 0: // none
		return b
	case 1: // truncate the records section
		cut := rapid.IntRange(batch.HeaderSize, len(b)-1).Draw(t, "cut")
		b = b[:cut]
	case 2: // flip bytes past the CRC (attributes, counts, timestamps, records)
		for _, i := range rapid.SliceOfN(rapid.IntRange(21, len(b)-1), 1, 4).Draw(t, "flips") {
			b[i] ^= rapid.ByteRange(1, 255).Draw(t, "xor")
		}
	case 3: // wrong record count and/or last offset delta
		binary.BigEndian.PutUint32(b[57:], uint32(rapid.Int32Range(-2, 20).Draw(t, "count")))
		if rapid.Bool().Draw(t, "delta too") {
			binary.BigEndian.PutUint32(b[23:], uint32(rapid.Int32Range(-2, 20).Draw(t, "delta")))
		}
	case 4: // a wrong codec
		attrs := binary.BigEndian.Uint16(b[21:])&^7 | uint16(rapid.IntRange(0, 7).Draw(t, "codec"))
		binary.BigEndian.PutUint16(b[21:], attrs)
	case 5: // junk after the records
		b = append(b, rapid.SliceOfN(rapid.Byte(), 1, 8).Draw(t, "junk")...)
	case 6: // uncompressed records re-sent with the first offset delta changed
		h.Attributes &^= 7
		d := rapid.Int32Range(-1, 3).Draw(t, "first delta")
		return batchtest.Assemble(h, rebuildFirst(plainRecords, d))
	case 7: // a record length that lies
		h.Attributes &^= 7
		recs := append([]byte(nil), plainRecords...)
		l, n := binary.Varint(recs)
		l += int64(rapid.IntRange(-3, 3).Draw(t, "length lie"))
		out := append(binary.AppendVarint(nil, l), recs[n:]...)
		return batchtest.Assemble(h, out)
	}
	batchtest.FixCRC(b)
	return b
}

// rebuildFirst re-encodes the first record of plain records with offset delta d.
func rebuildFirst(plain []byte, d int32) []byte {
	l, n := binary.Varint(plain)
	var r kmsg.Record
	if err := r.ReadFrom(plain[:n+int(l)]); err != nil {
		panic(err)
	}
	r.OffsetDelta = d
	return append(batchtest.Encode(r), plain[n+int(l):]...)
}

// sliceOnly hides compress.Codecs' Inflate: Validate then inflates a whole batch and
// walks the slice, the path taken with a Decompressor that cannot stream.
type sliceOnly struct{ c compress.Codecs }

func (d sliceOnly) Decompress(codec int8, src []byte, limit int) ([]byte, error) {
	return d.c.Decompress(codec, src, limit)
}

// sameVerdict requires the streamed walk (p, with compress.Codecs) and the slice walk
// to agree on b: both accept with the same summary, or both refuse, with the same code
// unless one of them hit the inflation bound first.
func sameVerdict(t interface{ Fatalf(string, ...any) }, b []byte, p *batch.Policy,
	s batch.Summary, err error) {
	q := *p
	q.Decompressor = sliceOnly{}
	s2, err2 := batch.Validate(b, &q)
	switch {
	case (err == nil) != (err2 == nil):
		t.Fatalf("streamed walk says %v, slice walk says %v", err, err2)
	case err == nil && (s.MaxTimestamp != s2.MaxTimestamp || s.RecordsBytes != s2.RecordsBytes):
		t.Fatalf("streamed walk %+v, slice walk %+v", s, s2)
	case err != nil && batch.ErrorCode(err) != batch.ErrorCode(err2) &&
		!errors.Is(err, batch.ErrDecompressedTooLarge) &&
		!errors.Is(err2, batch.ErrDecompressedTooLarge):
		t.Fatalf("streamed walk refuses with %v, slice walk with %v", err, err2)
	}
}

// The property: whatever a producer sends, every batch Validate accepts decodes
// completely with franz-go's decoders, with as many records as its header says; and
// every unmutated batch is accepted.
func TestAcceptedBatchesDecodeWithFranzGo(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		recs := genRecords(t)
		var plain []byte
		for _, r := range recs {
			plain = append(plain, batchtest.Encode(r)...)
		}
		c := codecs[rapid.IntRange(0, len(codecs)-1).Draw(t, "codec")]
		body := plain
		if c.comp != nil {
			var err error
			if body, err = c.comp(plain); err != nil {
				t.Fatal(err)
			}
		}
		h := batchtest.Plain(int32(len(recs)), now)
		h.Attributes = int16(c.id)
		b := batchtest.Assemble(h, body)
		mutated := mutate(t, append([]byte(nil), b...), plain, h)
		p := &batch.Policy{NowMs: now, TimestampBeforeMaxMs: math.MaxInt64,
			TimestampAfterMaxMs: math.MaxInt64, Decompressor: compress.Codecs{}}
		s, err := batch.Validate(mutated, p)
		sameVerdict(t, mutated, p, s, err)
		if string(mutated) == string(b) && err != nil {
			t.Fatalf("a well-formed %s batch was refused: %v", c.name, err)
		}
		if err != nil {
			if batch.ErrorCode(err) == 0 {
				t.Fatalf("refused without an error code: %v", err)
			}
			return
		}
		got, derr := franzDecode(mutated)
		if derr != nil {
			t.Fatalf("accepted, but franz-go cannot decode it: %v", derr)
		}
		if int32(len(got)) != s.Header.RecordCount {
			t.Fatalf("accepted %d records, franz-go decoded %d", s.Header.RecordCount, len(got))
		}
	})
}

// FuzzValidate: the fuzzer's bytes, with the length field and CRC made right so that
// they reach the record checks. Validate must never panic, and whatever it accepts
// franz-go must decode completely.
func FuzzValidate(f *testing.F) {
	for _, c := range codecs {
		f.Add(benchBatch(f, 3, 20, c))
	}
	for _, m := range batchtest.Malformed(now) {
		f.Add(m.Batch)
	}
	p := &batch.Policy{NowMs: now, TimestampBeforeMaxMs: math.MaxInt64,
		TimestampAfterMaxMs: 3_600_000, Decompressor: compress.Codecs{},
		MaxDecompressedBytes: 1 << 20}
	f.Fuzz(func(t *testing.T, b []byte) {
		batchtest.FixCRC(b)
		s, err := batch.Validate(b, p)
		sameVerdict(t, b, p, s, err)
		if err != nil {
			if batch.ErrorCode(err) == 0 {
				t.Fatalf("refused without an error code: %v", err)
			}
			return
		}
		got, derr := franzDecode(b)
		if derr != nil {
			t.Fatalf("accepted, but franz-go cannot decode it: %v", derr)
		}
		if int32(len(got)) != s.Header.RecordCount {
			t.Fatalf("accepted %d records, franz-go decoded %d", s.Header.RecordCount, len(got))
		}
		if _, err := batch.CheckRecords(b, compress.Codecs{}, 1<<20); err != nil {
			t.Fatalf("Validate accepted what CheckRecords refuses: %v", err)
		}
	})
}
