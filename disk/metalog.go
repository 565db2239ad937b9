package disk

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/sluicemq/sluice/core/meta"
)

// metaPrefix is the key prefix of metadata records in the StateStore.
const metaPrefix = "meta/"

// MetaLog stores committed metadata records in a StateStore under "meta/" followed by
// an 8-byte big-endian sequence number, so key order is commit order. Values are the
// JSON encoding of meta.Record, whose field names are part of the on-disk format.
type MetaLog struct {
	mu   sync.Mutex
	st   StateStore
	next uint64 // sequence of the next record
}

// NewMetaLog opens the metadata log kept in st.
func NewMetaLog(st StateStore) (*MetaLog, error) {
	m := &MetaLog{st: st}
	err := st.Scan([]byte(metaPrefix), func(k, _ []byte) error {
		seq, err := metaSeq(k)
		if err != nil {
			return err
		}
		m.next = seq + 1
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Append stores rec after every record appended before; durable on return.
func (m *MetaLog) Append(rec meta.Record) error {
	val, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode metadata record: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.st.Set(metaKey(m.next), val); err != nil {
		return fmt.Errorf("append metadata record: %w", err)
	}
	m.next++
	return nil
}

// Load returns every stored record in commit order.
func (m *MetaLog) Load() ([]meta.Record, error) {
	var recs []meta.Record
	err := m.st.Scan([]byte(metaPrefix), func(k, v []byte) error {
		var r meta.Record
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("decode metadata record %x: %w", k, err)
		}
		recs = append(recs, r)
		return nil
	})
	return recs, err
}

func metaKey(seq uint64) []byte {
	k := make([]byte, len(metaPrefix)+8)
	copy(k, metaPrefix)
	binary.BigEndian.PutUint64(k[len(metaPrefix):], seq)
	return k
}

func metaSeq(k []byte) (uint64, error) {
	if len(k) != len(metaPrefix)+8 {
		return 0, fmt.Errorf("metadata key %q: want %d bytes", k, len(metaPrefix)+8)
	}
	return binary.BigEndian.Uint64(k[len(metaPrefix):]), nil
}
