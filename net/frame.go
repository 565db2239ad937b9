package net

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// header is a Kafka request header (versions 1 and 2; v0 without a client id is not
// sent by any client Sluice supports, since every request key we serve is newer).
type header struct {
	key      int16
	version  int16
	corr     int32
	clientID string
}

// errShortHeader reports a frame too short to hold a request header.
var errShortHeader = errors.New("frame too short for a request header")

// parseHeader reads the fixed part of a request header (key, version, correlation id,
// nullable client id) from body and returns the rest. A client id equal to prevClientID
// reuses that string: a connection sends the same id every time, and this saves an
// allocation per request. Whether tagged fields follow
// depends on the key and version, so skipTags is the caller's next step for flexible
// requests.
func parseHeader(body []byte, prevClientID string) (header, []byte, error) {
	if len(body) < 10 {
		return header{}, nil, errShortHeader
	}
	h := header{
		key:     int16(binary.BigEndian.Uint16(body[0:])),
		version: int16(binary.BigEndian.Uint16(body[2:])),
		corr:    int32(binary.BigEndian.Uint32(body[4:])),
	}
	n := int(int16(binary.BigEndian.Uint16(body[8:])))
	rest := body[10:]
	switch {
	case n == -1: // null client id
	case n < -1:
		return h, nil, fmt.Errorf("client id length %d is negative", n)
	case n > len(rest):
		return h, nil, fmt.Errorf("client id length %d exceeds the %d bytes left", n, len(rest))
	default:
		if string(rest[:n]) == prevClientID { // compared without allocating
			h.clientID = prevClientID
		} else {
			h.clientID = string(rest[:n])
		}
		rest = rest[n:]
	}
	return h, rest, nil
}

// peekCorrelation returns the correlation id of a frame whose header could not be fully
// parsed (it sits at a fixed place in every header version).
func peekCorrelation(body []byte) (int32, bool) {
	if len(body) < 8 {
		return 0, false
	}
	return int32(binary.BigEndian.Uint32(body[4:])), true
}

// skipTags skips a KIP-482 tagged-field section: a count, then per field a tag, a size
// and that many bytes. The server knows no header tags, so their contents are ignored.
func skipTags(b []byte) ([]byte, error) {
	count, b, err := uvarint(b)
	if err != nil {
		return nil, fmt.Errorf("tagged field count: %w", err)
	}
	for i := uint32(0); i < count; i++ {
		if _, b, err = uvarint(b); err != nil {
			return nil, fmt.Errorf("tag: %w", err)
		}
		var size uint32
		if size, b, err = uvarint(b); err != nil {
			return nil, fmt.Errorf("tag size: %w", err)
		}
		if uint64(size) > uint64(len(b)) {
			return nil, fmt.Errorf("tag size %d exceeds the %d bytes left", size, len(b))
		}
		b = b[size:]
	}
	return b, nil
}

// uvarint decodes an unsigned varint of at most 32 bits (5 bytes), as Kafka's tagged
// fields use.
func uvarint(b []byte) (uint32, []byte, error) {
	var v uint32
	for i := 0; i < 5; i++ {
		if i >= len(b) {
			return 0, nil, io.ErrUnexpectedEOF
		}
		c := b[i]
		if i == 4 && c > 0x0f {
			return 0, nil, errors.New("varint overflows 32 bits")
		}
		v |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, b[i+1:], nil
		}
	}
	return 0, nil, errors.New("varint longer than 5 bytes")
}

// bigBodyStep is the size up to which a frame's body is allocated at once. Larger bodies
// grow as their bytes actually arrive, so a client that announces 100 MiB and sends
// nothing cannot make the server allocate 100 MiB.
const bigBodyStep = 1 << 20

// readBody reads a body of exactly size bytes from r into a fresh buffer. The buffer is
// never reused: decoded messages alias it.
func readBody(r io.Reader, size int) ([]byte, error) {
	if size <= bigBodyStep {
		body := make([]byte, size)
		_, err := io.ReadFull(r, body)
		return body, err
	}
	body := make([]byte, 0, bigBodyStep)
	for len(body) < size {
		if len(body) == cap(body) {
			next := min(2*cap(body), size)
			grown := make([]byte, len(body), next)
			copy(grown, body)
			body = grown
		}
		n, err := io.ReadFull(r, body[len(body):cap(body)])
		body = body[:len(body)+n]
		if err != nil {
			return nil, err
		}
	}
	return body, nil
}
