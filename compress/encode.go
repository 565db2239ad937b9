package compress

import (
	"bytes"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/sluicemq/sluice/core/batch"
)

// Compress encodes src with one of Kafka's codecs. Only the log cleaner uses it: it
// rewrites a compressed batch it removed records from with the batch's own codec. Snappy
// is written as a raw block (as franz-go writes it; Kafka's decoders accept both that
// and xerial framing).
func (Codecs) Compress(codec int8, src []byte) ([]byte, error) {
	switch codec {
	case batch.CompressionGzip:
		return encodeVia(src, func(w io.Writer) (io.WriteCloser, error) {
			return gzip.NewWriter(w), nil
		})
	case batch.CompressionSnappy:
		return snappy.Encode(nil, src), nil
	case batch.CompressionLz4:
		return encodeVia(src, func(w io.Writer) (io.WriteCloser, error) {
			return lz4.NewWriter(w), nil
		})
	case batch.CompressionZstd:
		return encodeVia(src, func(w io.Writer) (io.WriteCloser, error) {
			return zstd.NewWriter(w, zstd.WithEncoderConcurrency(1))
		})
	default:
		return nil, fmt.Errorf("%w %d", ErrUnknownCodec, codec)
	}
}

func encodeVia(src []byte, mk func(io.Writer) (io.WriteCloser, error)) ([]byte, error) {
	var buf bytes.Buffer
	w, err := mk(&buf)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(src); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
