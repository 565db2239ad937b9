package compress

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/sluicemq/sluice/core/batch"
)

// ErrUnknownCodec is returned for a codec number Kafka does not define.
var ErrUnknownCodec = errors.New("compress: unknown codec")

// zstdMinWindow is the smallest window limit given to zstd: the window a frame declares
// is not its content size, and encoders pick windows of a few MiB even for small
// batches. Windows above max(limit, this) are refused before anything is allocated.
const zstdMinWindow = 8 << 20

// Codecs implements batch.Decompressor with Kafka's four codecs. The zero value is
// ready; it holds no state, so one value may serve several goroutines.
type Codecs struct{}

var _ batch.Decompressor = Codecs{}

// Decompress implements batch.Decompressor.
func (Codecs) Decompress(codec int8, src []byte, limit int) ([]byte, error) {
	if limit < 0 {
		limit = 0
	}
	switch codec {
	case batch.CompressionGzip:
		return gunzip(src, limit)
	case batch.CompressionSnappy:
		return unsnappy(src, limit)
	case batch.CompressionLz4:
		return unlz4(src, limit)
	case batch.CompressionZstd:
		return unzstd(src, limit)
	default:
		return nil, fmt.Errorf("%w %d", ErrUnknownCodec, codec)
	}
}

var _ batch.Inflater = Codecs{}

// Inflate implements batch.Inflater: the records section as a stream, so that produce
// validates a compressed batch holding one small buffer, not the inflated batch. The
// reader stops with batch.ErrDecompressedTooLarge past limit bytes. done returns the
// decoder to its pool.
func (Codecs) Inflate(codec int8, src []byte, limit int) (io.Reader, func(), error) {
	limit = max(limit, 0)
	switch codec {
	case batch.CompressionGzip:
		zr, err := gzipReader(src)
		if err != nil {
			return nil, nil, err
		}
		return capped(zr, limit), func() { gzipPool.Put(zr) }, nil
	case batch.CompressionSnappy:
		out, err := unsnappy(src, limit) // a block states its size: bounded before allocating
		if err != nil {
			return nil, nil, err
		}
		return bytes.NewReader(out), func() {}, nil
	case batch.CompressionLz4:
		zr, err := lz4Reader(src)
		if err != nil {
			return nil, nil, err
		}
		return capped(zr, limit), func() { lz4Pool.Put(zr) }, nil
	case batch.CompressionZstd:
		zr, err := zstdReader(src, batch.MaxDecompressedBytes)
		if err != nil {
			return nil, nil, err
		}
		cr := &cappedReader{r: zr, left: limit}
		return cr, func() {
			if cr.eof {
				zstdPool.Put(zr) // read to its end: nothing of this stream is left in it
			} else {
				zr.Close()
			}
		}, nil
	default:
		return nil, nil, fmt.Errorf("%w %d", ErrUnknownCodec, codec)
	}
}

// capped reads r, failing with batch.ErrDecompressedTooLarge once it yields more than
// limit bytes.
func capped(r io.Reader, limit int) io.Reader { return &cappedReader{r: r, left: limit} }

type cappedReader struct {
	r    io.Reader
	left int
	eof  bool // r ended cleanly
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, batch.ErrDecompressedTooLarge
	}
	if len(p) > c.left+1 {
		p = p[:c.left+1] // one byte past the limit tells a bomb from a batch at the limit
	}
	n, err := c.r.Read(p)
	c.left -= n
	if c.left < 0 {
		return n, batch.ErrDecompressedTooLarge
	}
	c.eof = err == io.EOF
	return n, err
}

// readLimited reads r to the end, failing once it yields more than limit bytes.
func readLimited(r io.Reader, limit int) ([]byte, error) {
	out, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(out) > limit {
		return nil, fmt.Errorf("%w (%d bytes)", batch.ErrDecompressedTooLarge, limit)
	}
	return out, nil
}

// Decoders are pooled: produce inflates every compressed batch to validate it, and
// setting a decoder up (zstd's above all) costs more than inflating a small batch. A
// decoder is reset onto each new input, so which one a call gets changes nothing in
// its output.
var (
	gzipPool sync.Pool // *gzip.Reader
	lz4Pool  sync.Pool // *lz4.Reader
	zstdPool sync.Pool // *zstd.Decoder for the default limit (batch.MaxDecompressedBytes)
)

// gzipReader returns a pooled gzip reader over src; the caller puts it back.
func gzipReader(src []byte) (*gzip.Reader, error) {
	zr, _ := gzipPool.Get().(*gzip.Reader)
	if zr == nil {
		return gzip.NewReader(bytes.NewReader(src))
	}
	if err := zr.Reset(bytes.NewReader(src)); err != nil {
		gzipPool.Put(zr)
		return nil, err
	}
	return zr, nil
}

func gunzip(src []byte, limit int) ([]byte, error) {
	zr, err := gzipReader(src)
	if err != nil {
		return nil, err
	}
	defer gzipPool.Put(zr)
	return readLimited(zr, limit)
}

// lz4Reader returns a pooled single-threaded lz4 reader over src; the caller puts it
// back.
func lz4Reader(src []byte) (*lz4.Reader, error) {
	zr, _ := lz4Pool.Get().(*lz4.Reader)
	if zr == nil {
		zr = lz4.NewReader(nil)
		if err := zr.Apply(lz4.ConcurrencyOption(1)); err != nil {
			return nil, err
		}
	}
	zr.Reset(bytes.NewReader(src))
	return zr, nil
}

func unlz4(src []byte, limit int) ([]byte, error) {
	zr, err := lz4Reader(src)
	if err != nil {
		return nil, err
	}
	defer lz4Pool.Put(zr)
	return readLimited(zr, limit)
}

// zstdReader returns a single-threaded zstd decoder over src whose window may not
// exceed max(limit, zstdMinWindow). For the default limit it comes from a pool, to
// which the caller puts it back (zstdPool.Put); otherwise it is new, and the caller
// closes it.
func zstdReader(src []byte, limit int) (*zstd.Decoder, error) {
	var zr *zstd.Decoder
	if limit == batch.MaxDecompressedBytes {
		zr, _ = zstdPool.Get().(*zstd.Decoder)
	}
	if zr == nil {
		var err error
		zr, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(uint64(max(limit, zstdMinWindow))))
		if err != nil {
			return nil, err
		}
	}
	if err := zr.Reset(bytes.NewReader(src)); err != nil {
		zr.Close()
		return nil, err
	}
	return zr, nil
}

func unzstd(src []byte, limit int) ([]byte, error) {
	zr, err := zstdReader(src, limit)
	if err != nil {
		return nil, err
	}
	out, err := readLimited(zr, limit)
	if limit == batch.MaxDecompressedBytes && err == nil {
		zstdPool.Put(zr) // single-threaded: a pooled decoder holds no goroutine
	} else {
		zr.Close()
	}
	return out, err
}

// xerialMagic opens snappy data in the xerial framing (snappy-java's
// SnappyOutputStream): the magic, a version and a compatible-version int32, then
// chunks of a big-endian int32 length and one raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderLen = 16

func unsnappy(src []byte, limit int) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialMagic) {
		return snappyBlock(nil, src, limit)
	}
	if len(src) < xerialHeaderLen {
		return nil, fmt.Errorf("compress: xerial snappy header truncated")
	}
	var out []byte
	for rest := src[xerialHeaderLen:]; len(rest) > 0; {
		if len(rest) < 4 {
			return nil, fmt.Errorf("compress: xerial snappy chunk length truncated")
		}
		n := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(n) > uint64(len(rest)) {
			return nil, fmt.Errorf("compress: xerial snappy chunk of %d bytes, %d left", n, len(rest))
		}
		var err error
		if out, err = snappyBlock(out, rest[:n], limit); err != nil {
			return nil, err
		}
		rest = rest[n:]
	}
	return out, nil
}

// snappyBlock appends the decoding of one raw snappy block to out. The block states its
// decoded length up front, so the limit is checked before anything is allocated.
func snappyBlock(out, block []byte, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return nil, err
	}
	if n > limit-len(out) {
		return nil, fmt.Errorf("%w (%d bytes)", batch.ErrDecompressedTooLarge, limit)
	}
	dec, err := snappy.Decode(nil, block)
	if err != nil {
		return nil, err
	}
	if out == nil {
		return dec, nil // the first (or only) block: no copy
	}
	return append(out, dec...), nil
}
