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

func gunzip(src []byte, limit int) ([]byte, error) {
	zr, _ := gzipPool.Get().(*gzip.Reader)
	var err error
	if zr == nil {
		zr, err = gzip.NewReader(bytes.NewReader(src))
	} else {
		err = zr.Reset(bytes.NewReader(src))
	}
	if err != nil {
		return nil, err
	}
	defer gzipPool.Put(zr)
	return readLimited(zr, limit)
}

func unlz4(src []byte, limit int) ([]byte, error) {
	zr, _ := lz4Pool.Get().(*lz4.Reader)
	if zr == nil {
		zr = lz4.NewReader(nil)
		if err := zr.Apply(lz4.ConcurrencyOption(1)); err != nil {
			return nil, err
		}
	}
	zr.Reset(bytes.NewReader(src))
	defer lz4Pool.Put(zr)
	return readLimited(zr, limit)
}

func unzstd(src []byte, limit int) ([]byte, error) {
	pooled := limit == batch.MaxDecompressedBytes
	var zr *zstd.Decoder
	if pooled {
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
	out, err := readLimited(zr, limit)
	if pooled && err == nil {
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
