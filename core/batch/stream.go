package batch

import (
	"errors"
	"fmt"
	"io"
)

// Inflater is an optional extension of Decompressor: Inflate returns the records
// section of a compressed batch as a stream, so that Validate walks its records
// without holding them inflated. A batch then costs one small buffer however far it
// inflates (Kafka's validator streams the same way), and a zip bomb is cut off at
// limit bytes read. done releases the reader; it is called once the walk ends.
type Inflater interface {
	Inflate(codec int8, src []byte, limit int) (r io.Reader, done func(), err error)
}

// streamBufSize is the buffer a streamed walk reads through.
const streamBufSize = 32 << 10

// walkInflated walks the records of a compressed batch as inf streams them.
func walkInflated(inf Inflater, codec int8, src []byte, limit int, h *Header,
	p *Policy) (Summary, error) {
	s := Summary{Header: *h, MaxTimestamp: NoTimestamp}
	r, done, err := inf.Inflate(codec, src, limit)
	if err != nil {
		return s, inflateError(codec, err, limit)
	}
	defer done()
	st := &stream{r: r, buf: make([]byte, streamBufSize), limit: limit}
	maxTs, err := st.walk(h, p)
	s.MaxTimestamp, s.RecordsBytes = maxTs, st.read
	if st.err != nil {
		return s, inflateError(codec, st.err, limit) // the stream broke: that is the cause
	}
	return s, err
}

func inflateError(codec int8, err error, limit int) error {
	if errors.Is(err, ErrDecompressedTooLarge) {
		return fmt.Errorf("%w (%d bytes)", ErrDecompressedTooLarge, limit)
	}
	return &RecordsError{Err: ErrInflate, Detail: fmt.Sprintf("codec %d: %v", codec, err)}
}

// stream reads an inflated records section through a buffer, counting the bytes and
// stopping past limit.
type stream struct {
	r        io.Reader
	buf      []byte
	pos, end int
	read     int   // bytes taken from r
	limit    int   // at most this many
	eof      bool  // r is exhausted
	err      error // r failed, or passed limit (ErrDecompressedTooLarge)
}

// more reports whether another byte is available, reading when the buffer is empty.
func (s *stream) more() bool {
	for s.pos == s.end {
		if s.eof || s.err != nil {
			return false
		}
		n, err := s.r.Read(s.buf)
		s.pos, s.end = 0, n
		s.read += n
		switch {
		case s.read > s.limit:
			s.err, s.end = ErrDecompressedTooLarge, 0
		case err == io.EOF:
			s.eof = true
		case err != nil:
			s.err = err
		case n == 0:
			s.err = io.ErrNoProgress
		}
	}
	return true
}

func (s *stream) byte() (byte, bool) {
	if !s.more() {
		return 0, false
	}
	c := s.buf[s.pos]
	s.pos++
	return c, true
}

// skip drops n bytes; false when the stream ends first.
func (s *stream) skip(n int) bool {
	for n > 0 {
		if !s.more() {
			return false
		}
		k := min(n, s.end-s.pos)
		s.pos += k
		n -= k
	}
	return true
}

// uvarint reads an unsigned varint of at most maxBytes bytes whose last byte may not
// exceed lastMax, as readVarint and readVarlong accept. It returns the value and the
// bytes used; used is 0 when the stream ends first and -1 for a bad encoding.
func (s *stream) uvarint(maxBytes int, lastMax byte) (uint64, int) {
	var x uint64
	for i := 0; i < maxBytes; i++ {
		c, ok := s.byte()
		if !ok {
			return 0, 0
		}
		if i == maxBytes-1 {
			if c > lastMax {
				return 0, -1
			}
		} else if c >= 0x80 {
			x |= uint64(c&0x7f) << (7 * i)
			continue
		}
		return x | uint64(c)<<(7*i), i + 1
	}
	return 0, -1
}

func (s *stream) varint() (int32, int) {
	u, n := s.uvarint(5, 0x0f)
	x := uint32(u)
	return int32(x>>1) ^ -int32(x&1), n
}

func (s *stream) varlong() (int64, int) {
	u, n := s.uvarint(10, 0x01)
	return int64(u>>1) ^ -int64(u&1), n
}

// walk decodes the header's count of records, as walkRecords does on a slice.
func (s *stream) walk(h *Header, p *Policy) (int64, error) {
	w := newWalk(h, p)
	for i := int32(0); i < h.RecordCount; i++ {
		if !s.more() {
			return w.maxTs, w.short(i)
		}
		tsDelta, offDelta, bad := s.record(requireKey(p))
		if bad == noKeyMessage {
			return w.maxTs, recordFault(ErrNoKey, i, bad)
		}
		if bad != "" {
			return w.maxTs, recordFault(ErrBadRecord, i, bad)
		}
		if err := w.record(i, tsDelta, offDelta); err != nil {
			return w.maxTs, err
		}
	}
	if s.more() {
		return w.maxTs, &RecordsError{Err: ErrTrailingBytes,
			Detail: fmt.Sprintf("bytes after record %d", h.RecordCount-1)}
	}
	return w.finish()
}

// record reads one record with the rules of parseRecord; bad is empty for a good one.
func (s *stream) record(needKey bool) (tsDelta int64, offDelta int32, bad string) {
	length, n := s.varint()
	switch {
	case n == 0:
		return 0, 0, "record runs past the end of the batch"
	case n < 0:
		return 0, 0, "record length is not a valid varint"
	case length < minRecordBody:
		return 0, 0, "record length too small"
	}
	rec := recordReader{s: s, left: int64(length)}
	if !rec.skip(1) { // attributes
		return 0, 0, rec.why("attributes")
	}
	if tsDelta, bad = rec.varlong("timestamp delta"); bad != "" {
		return 0, 0, bad
	}
	if offDelta, bad = rec.varint("offset delta", -1<<31); bad != "" {
		return 0, 0, bad
	}
	kl, bad := rec.varint("key length", -1)
	if bad != "" {
		return 0, 0, bad
	}
	if needKey && kl < 0 {
		return 0, 0, noKeyMessage
	}
	if kl > 0 && !rec.skip(int64(kl)) {
		return 0, 0, rec.why("key")
	}
	if bad = rec.bytes("value", -1); bad != "" {
		return 0, 0, bad
	}
	headers, bad := rec.varint("header count", 0)
	for j := int32(0); bad == "" && j < headers; j++ {
		if bad = rec.bytes("header key", 0); bad == "" {
			bad = rec.bytes("header value", -1)
		}
	}
	if bad == "" && rec.left != 0 {
		bad = "record fields do not fill its length"
	}
	return tsDelta, offDelta, bad
}

// recordReader reads the fields of one record from a stream, never past its length.
type recordReader struct {
	s    *stream
	left int64 // bytes of the record not read yet
}

// why explains a failed read of what: the record's length ran out, or the stream did.
func (r *recordReader) why(what string) string {
	if r.left < 0 {
		return what + " runs past the end of the record"
	}
	return "record runs past the end of the batch"
}

func (r *recordReader) skip(n int64) bool {
	if n > r.left {
		r.left = -1
		return false
	}
	r.left -= n
	return r.s.skip(int(n))
}

func (r *recordReader) varint(what string, minVal int32) (int32, string) {
	v, n := r.s.varint()
	r.left -= int64(max(n, 0))
	switch {
	case n == 0 || r.left < 0:
		return 0, r.why(what)
	case n < 0:
		return 0, what + " is not a valid varint"
	case v < minVal:
		return 0, what + " is negative"
	}
	return v, ""
}

func (r *recordReader) varlong(what string) (int64, string) {
	v, n := r.s.varlong()
	r.left -= int64(max(n, 0))
	switch {
	case n == 0 || r.left < 0:
		return 0, r.why(what)
	case n < 0:
		return 0, what + " is not a valid varlong"
	}
	return v, ""
}

// bytes skips a length-prefixed field whose length may not be below minLen.
func (r *recordReader) bytes(what string, minLen int32) string {
	l, bad := r.varint(what+" length", minLen)
	if bad != "" {
		return bad
	}
	if l > 0 && !r.skip(int64(l)) {
		return r.why(what)
	}
	return ""
}
