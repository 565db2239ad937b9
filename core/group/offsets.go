package group

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"

	"github.com/sluicemq/sluice/core"
)

// OffsetsTopic is the internal topic committed offsets are stored in, as in Kafka.
const OffsetsTopic = "__consumer_offsets"

// Offset is one committed offset.
type Offset struct {
	Offset      int64
	LeaderEpoch int32 // -1 when the client did not say
	Metadata    string
	CommitMs    int64
	// ExpireMs is the explicit expiry time an OffsetCommit v2–v4 asked for with its
	// retention time (commit time + RetentionTimeMs); 0 when it did not, and the
	// group's offsets.retention.minutes applies (expiry.go).
	ExpireMs int64
}

// Partition maps a group to its partition of the offsets topic. It is FNV-1a, fixed
// forever: a different hash would strand every committed offset after an upgrade.
func Partition(groupID string, partitions int32) int32 {
	if partitions <= 0 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(groupID))
	return int32(h.Sum32() % uint32(partitions))
}

// Record layouts, Kafka's own (so tools that know Kafka's format can read the topic):
//
//	key   v1: int16 version=1, string group, string topic, int32 partition
//	value v3: int16 version=3, int64 offset, int32 leader epoch, string metadata,
//	          int64 commit timestamp
//	value v1: int16 version=1, int64 offset, string metadata, int64 commit timestamp,
//	          int64 expire timestamp
//
// Like Kafka, a commit with an explicit expiry (ExpireMs) is written as value v1, the
// only layout with an expire timestamp; v1 has no leader epoch, which such commits
// (OffsetCommit v2–v4) never carry anyway (DecodeValue gives -1).
// Strings are an int16 length and the bytes. A nil value is a tombstone: the offset was
// deleted. Keys of other versions (Kafka's group-metadata records) are skipped.
const (
	keyVersion         = 1
	valueVersion       = 3
	expireValueVersion = 1
)

// ErrNotOffsetRecord is returned by DecodeKey for keys that are not offset commits.
var ErrNotOffsetRecord = errors.New("group: not an offset commit record")

// EncodeKey encodes the record key of one committed offset.
func EncodeKey(groupID string, tp core.TopicPartition) []byte {
	b := binary.BigEndian.AppendUint16(nil, keyVersion)
	b = appendString(b, groupID)
	b = appendString(b, tp.Topic)
	return binary.BigEndian.AppendUint32(b, uint32(tp.Partition))
}

// EncodeValue encodes the record value of one committed offset.
func EncodeValue(o Offset) []byte {
	if o.ExpireMs != 0 {
		b := binary.BigEndian.AppendUint16(nil, expireValueVersion)
		b = binary.BigEndian.AppendUint64(b, uint64(o.Offset))
		b = appendString(b, o.Metadata)
		b = binary.BigEndian.AppendUint64(b, uint64(o.CommitMs))
		return binary.BigEndian.AppendUint64(b, uint64(o.ExpireMs))
	}
	b := binary.BigEndian.AppendUint16(nil, valueVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(o.Offset))
	b = binary.BigEndian.AppendUint32(b, uint32(o.LeaderEpoch))
	b = appendString(b, o.Metadata)
	return binary.BigEndian.AppendUint64(b, uint64(o.CommitMs))
}

// DecodeKey decodes a record key; ErrNotOffsetRecord for other record kinds.
func DecodeKey(b []byte) (groupID string, tp core.TopicPartition, err error) {
	d := decoder{b: b}
	v := d.int16()
	if d.err == nil && v != 0 && v != keyVersion {
		return "", tp, ErrNotOffsetRecord
	}
	groupID = d.string()
	tp.Topic = d.string()
	tp.Partition = int32(d.uint32())
	return groupID, tp, d.finish("key")
}

// DecodeValue decodes a non-nil record value.
func DecodeValue(b []byte) (Offset, error) {
	d := decoder{b: b}
	o := Offset{LeaderEpoch: -1}
	v := d.int16()
	if d.err == nil && v != valueVersion && v != expireValueVersion {
		return o, fmt.Errorf("group: offset value version %d not supported", v)
	}
	o.Offset = int64(d.uint64())
	if v == valueVersion {
		o.LeaderEpoch = int32(d.uint32())
	}
	o.Metadata = d.string()
	o.CommitMs = int64(d.uint64())
	if v == expireValueVersion {
		o.ExpireMs = max(int64(d.uint64()), 0) // Kafka writes -1 for none
	}
	return o, d.finish("value")
}

func appendString(b []byte, s string) []byte {
	if len(s) > math.MaxInt16 {
		s = s[:math.MaxInt16] // callers bound lengths first; never write a bad length
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// decoder reads big-endian fields, remembering the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.err = errors.New("truncated")
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) int16() int16 {
	if b := d.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (d *decoder) uint32() uint32 {
	if b := d.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (d *decoder) uint64() uint64 {
	if b := d.take(8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

func (d *decoder) string() string {
	n := d.int16()
	return string(d.take(int(n)))
}

func (d *decoder) finish(what string) error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return fmt.Errorf("group: offset %s: %w", what, d.err)
	}
	return nil
}
