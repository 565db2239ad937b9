package disk

import (
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"

	"github.com/sluicemq/sluice/core/batch"
)

// File name suffixes of a segment's three files.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
)

// scanChunk is how many bytes a sequential scan reads per ReadAt.
const scanChunk = 64 << 10

// segment is one file of record batches starting at base. Only the last segment of a
// log (the active one) takes writes; the others are sealed and immutable.
type segment struct {
	base      int64
	f         File
	size      int64 // bytes of whole, valid batches
	next      int64 // offset after the last batch
	createdMs int64
	idx       segIndex
	sealed    bool

	// Guarded by PartitionLog.mu, because Sync updates them from another goroutine.
	synced      int64 // bytes known durable
	indexedSize int64 // bytes certified by the index files on disk (0: none)
	indexFailed bool  // writing the index files failed once; recovery will rebuild them
	// truncFloor is the smallest size TruncateTo cut the segment to since the running
	// Sync listed it: that Sync's fsync covers the bytes below it, not what was appended
	// in place of the cut ones.
	truncFloor int64
}

func segmentFile(dir string, base int64, suffix string) string {
	return path.Join(dir, fmt.Sprintf("%020d%s", base, suffix))
}

// parseSegmentName returns the base offset and suffix of a segment file name; only the
// canonical 20-digit form is accepted.
func parseSegmentName(name string) (int64, string, bool) {
	if len(name) < 21 {
		return 0, "", false
	}
	base, err := strconv.ParseInt(name[:20], 10, 64)
	if err != nil || base < 0 || fmt.Sprintf("%020d", base) != name[:20] {
		return 0, "", false
	}
	switch suffix := name[20:]; suffix {
	case logSuffix, indexSuffix, timeIndexSuffix:
		return base, suffix, true
	default:
		return 0, "", false
	}
}

// corruptError reports bytes that are not a valid batch at pos. Recovery truncates there;
// a reader reports it.
type corruptError struct {
	pos int64
	err error
}

func (e *corruptError) Error() string {
	return fmt.Sprintf("bad batch at byte %d: %v", e.pos, e.err)
}
func (e *corruptError) Unwrap() error { return e.err }

var errShortBatch = errors.New("batch extends past the end of the segment")

// readFull reads exactly len(p) bytes at off; a short read is an I/O error here because
// callers only read below a size they know.
func readFull(f File, p []byte, off int64) error {
	n, err := f.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("read %d bytes at %d: %w", len(p), off, err)
}

// scanner walks the batches of a segment from pos up to limit with chunked reads.
type scanner struct {
	f      File
	pos    int64
	limit  int64
	buf    []byte
	bufPos int64 // file position of buf[0]
	// want and end, when chained: the base offset the next batch must have and the
	// segment's end offset no batch may pass.
	chained   bool
	want, end int64
}

func newScanner(f File, pos, limit int64) *scanner {
	return &scanner{f: f, pos: pos, limit: limit}
}

// newChainScanner is a scanner that also checks the offsets chain: the batch at pos
// must start at first, each following batch where its predecessor ended, none past
// end. Base offsets are outside the CRC, so a header scan that answers offsets (a
// lookup by time, ScanHeaders) must not trust a rotten one: a mismatch is a
// *corruptError, as in verifyServed.
func newChainScanner(f File, pos, limit, first, end int64) *scanner {
	return &scanner{f: f, pos: pos, limit: limit, chained: true, want: first, end: end}
}

// checkChain checks the header h found at the scan position against the chain.
func (s *scanner) checkChain(h *batch.Header) error {
	switch {
	case !s.chained:
		return nil
	case h.BaseOffset != s.want:
		return &corruptError{s.pos, fmt.Errorf("batch at %d where offset %d was due",
			h.BaseOffset, s.want)}
	case h.NextOffset() > s.end:
		return &corruptError{s.pos, fmt.Errorf("batch [%d, %d) ends past the segment end %d",
			h.BaseOffset, h.NextOffset(), s.end)}
	}
	s.want = h.NextOffset()
	return nil
}

// window returns n bytes at file position p; the slice is valid until the next call.
func (s *scanner) window(p int64, n int) ([]byte, error) {
	if p >= s.bufPos && p+int64(n) <= s.bufPos+int64(len(s.buf)) {
		return s.buf[p-s.bufPos : p-s.bufPos+int64(n)], nil
	}
	if n > scanChunk {
		big := make([]byte, n)
		return big, readFull(s.f, big, p)
	}
	want := min(int64(scanChunk), s.limit-p)
	if cap(s.buf) < scanChunk {
		s.buf = make([]byte, 0, scanChunk)
	}
	s.buf = s.buf[:want]
	s.bufPos = p
	if err := readFull(s.f, s.buf, p); err != nil {
		s.buf = s.buf[:0]
		return nil, err
	}
	return s.buf[:n], nil
}

// next returns the header of the batch at the scan position and, when body is true, its
// bytes, then advances. It returns io.EOF exactly at limit, a *corruptError for bytes
// that cannot be a batch, and other errors for I/O failures. Body bytes are checked
// only for framing; callers that need the CRC call batch.Check.
func (s *scanner) next(body bool) (batch.Header, []byte, error) {
	var h batch.Header
	if s.pos >= s.limit {
		return h, nil, io.EOF
	}
	if s.limit-s.pos < batch.HeaderSize {
		return h, nil, &corruptError{s.pos, batch.ErrTooShort}
	}
	hb, err := s.window(s.pos, batch.HeaderSize)
	if err != nil {
		return h, nil, err
	}
	if h, err = batch.ParseHeader(hb); err != nil {
		return h, nil, &corruptError{s.pos, err}
	}
	if err := s.checkChain(&h); err != nil {
		return h, nil, err
	}
	size := int64(h.Size())
	if s.pos+size > s.limit {
		return h, nil, &corruptError{s.pos, errShortBatch}
	}
	var b []byte
	if body {
		if b, err = s.window(s.pos, int(size)); err != nil {
			return h, nil, err
		}
	}
	s.pos += size
	return h, b, nil
}

// readBuf is the growable window a Read fills: buf holds the file bytes from base on.
type readBuf struct {
	f     File
	base  int64
	limit int64
	buf   []byte
}

// ensure makes the window cover file positions up to end (<= limit), reading more with
// one ReadAt when needed.
func (r *readBuf) ensure(end int64) error {
	have := r.base + int64(len(r.buf))
	if end <= have {
		return nil
	}
	target := min(r.limit, max(end, r.base+2*int64(len(r.buf))))
	grown := make([]byte, target-r.base)
	copy(grown, r.buf)
	if err := readFull(r.f, grown[have-r.base:], have); err != nil {
		return err
	}
	r.buf = grown
	return nil
}

// header parses the batch header at file position p.
func (r *readBuf) header(p int64) (batch.Header, error) {
	if p+batch.HeaderSize > r.limit {
		return batch.Header{}, &corruptError{p, batch.ErrTooShort}
	}
	if err := r.ensure(p + batch.HeaderSize); err != nil {
		return batch.Header{}, err
	}
	h, err := batch.ParseHeader(r.buf[p-r.base:])
	if err != nil {
		return h, &corruptError{p, err}
	}
	if p+int64(h.Size()) > r.limit {
		return h, &corruptError{p, errShortBatch}
	}
	return h, nil
}

// read implements Log.Read within this segment: whole batches from the one containing
// offset, at least one unless it ends beyond upTo, the rest within maxBytes and upTo.
// The first ReadAt covers one index interval plus maxBytes, so a read usually costs one
// syscall; the result is a subslice of that buffer.
func (s *segment) read(offset int64, maxBytes int, upTo int64, interval int) ([]byte, error) {
	pos := s.idx.lookupOffset(uint32(offset - s.base))
	r := &readBuf{f: s.f, base: pos, limit: s.size}
	first := min(s.size-pos, int64(interval)+int64(max(maxBytes, 0))+batch.HeaderSize)
	r.buf = make([]byte, first)
	if err := readFull(s.f, r.buf, pos); err != nil {
		return nil, err
	}
	// Find the batch containing offset; the index guarantees it is at or after pos.
	var h batch.Header
	for {
		if pos >= s.size {
			return nil, &corruptError{pos, fmt.Errorf("segment %d: offset %d not found below %d",
				s.base, offset, s.next)}
		}
		var err error
		if h, err = r.header(pos); err != nil {
			return nil, err
		}
		if h.NextOffset() > offset {
			break
		}
		pos += int64(h.Size())
	}
	start, total := pos, int64(0)
	for {
		pastUpTo := h.NextOffset() > upTo && !(mutantOn("read-upto-base") && h.BaseOffset <= upTo)
		if pastUpTo || (total > 0 && total+int64(h.Size()) > int64(maxBytes)) {
			break
		}
		if err := r.ensure(pos + int64(h.Size())); err != nil {
			return nil, err
		}
		total += int64(h.Size())
		pos += int64(h.Size())
		// Stop before reading a header that could not fit anyway.
		if pos >= s.size || total+batch.HeaderSize > int64(maxBytes) {
			break
		}
		var err error
		if h, err = r.header(pos); err != nil {
			return nil, err
		}
	}
	if total == 0 {
		return nil, r.checkUnserved(h, start, offset)
	}
	return r.buf[start-r.base : pos-r.base], nil
}
