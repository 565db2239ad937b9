package disk

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/sluicemq/sluice/core/meta"
)

// metaPrefix is the key prefix of metadata records in the StateStore; metaSnapKey
// holds the last snapshot (outside the prefix, so record scans never see it).
const (
	metaPrefix  = "meta/"
	metaSnapKey = "metasnap"
)

// MetaLog stores committed metadata records in a StateStore under "meta/" followed by
// an 8-byte big-endian sequence number, so key order is commit order; the record with
// sequence s has index s+1 (the first index is 1). Values are the JSON encoding of
// meta.Record, whose field names are part of the on-disk format. A snapshot (Snapshot)
// replaces the records up to its index by records that rebuild the image there.
type MetaLog struct {
	mu   sync.Mutex
	st   StateStore
	next uint64 // sequence of the next record
}

// MetaState is what a restart replays (core/broker Start): the last snapshot, the index
// it covers (0: none) and the records after it, in index order.
type MetaState struct {
	SnapshotIndex uint64
	Snapshot      []meta.Record
	Records       []meta.Record
}

// metaSnapshot is the stored form of a snapshot.
type metaSnapshot struct {
	Index   uint64        `json:"index"`
	Records []meta.Record `json:"records"`
}

// NewMetaLog opens the metadata log kept in st.
func NewMetaLog(st StateStore) (*MetaLog, error) {
	m := &MetaLog{st: st}
	snap, err := m.loadSnapshot()
	if err != nil {
		return nil, err
	}
	m.next = snap.Index
	err = st.Scan([]byte(metaPrefix), func(k, _ []byte) error {
		seq, err := metaSeq(k)
		if err != nil {
			return err
		}
		m.next = max(m.next, seq+1)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Append stores rec after every record appended before and returns its index; durable
// on return. After an error the record is in doubt: the store may or may not keep it
// (a StateStore write that failed), and the next Append reuses its index.
func (m *MetaLog) Append(rec meta.Record) (uint64, error) {
	val, err := json.Marshal(rec)
	if err != nil {
		return 0, fmt.Errorf("encode metadata record: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.st.Set(metaKey(m.next), val); err != nil {
		return 0, fmt.Errorf("append metadata record: %w", err)
	}
	m.next++
	return m.next, nil
}

// LastIndex is the index of the last record appended (0: none).
func (m *MetaLog) LastIndex() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.next
}

// Load returns the last snapshot and every stored record after it, in index order.
func (m *MetaLog) Load() (MetaState, error) {
	snap, err := m.loadSnapshot()
	if err != nil {
		return MetaState{}, err
	}
	st := MetaState{SnapshotIndex: snap.Index, Snapshot: snap.Records}
	err = m.st.Scan([]byte(metaPrefix), func(k, v []byte) error {
		seq, err := metaSeq(k)
		if err != nil {
			return err
		}
		if seq < snap.Index {
			return nil // covered by the snapshot, not deleted yet
		}
		if want := st.SnapshotIndex + uint64(len(st.Records)); seq != want {
			return fmt.Errorf("metadata log: record %d follows index %d", seq+1, want)
		}
		var r meta.Record
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("decode metadata record %x: %w", k, err)
		}
		st.Records = append(st.Records, r)
		return nil
	})
	return st, err
}

// Snapshot stores image (records that rebuild the metadata image as of index) as the
// log's snapshot, then deletes the records it covers. index must not be beyond the last
// record. A crash between the two leaves records that Load skips.
func (m *MetaLog) Snapshot(index uint64, image []meta.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if index > m.next {
		return fmt.Errorf("metadata snapshot at %d beyond the last index %d", index, m.next)
	}
	val, err := json.Marshal(metaSnapshot{Index: index, Records: image})
	if err != nil {
		return fmt.Errorf("encode metadata snapshot: %w", err)
	}
	if err := m.st.Set([]byte(metaSnapKey), val); err != nil {
		return fmt.Errorf("store metadata snapshot: %w", err)
	}
	var covered [][]byte
	err = m.st.Scan([]byte(metaPrefix), func(k, _ []byte) error {
		if seq, err := metaSeq(k); err == nil && seq < index {
			covered = append(covered, append([]byte(nil), k...))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range covered {
		if err := m.st.Delete(k); err != nil {
			return fmt.Errorf("compact metadata log: %w", err)
		}
	}
	return nil
}

func (m *MetaLog) loadSnapshot() (metaSnapshot, error) {
	var snap metaSnapshot
	v, ok, err := m.st.Get([]byte(metaSnapKey))
	if err != nil || !ok {
		return snap, err
	}
	if err := json.Unmarshal(v, &snap); err != nil {
		return snap, fmt.Errorf("decode metadata snapshot: %w", err)
	}
	return snap, nil
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
