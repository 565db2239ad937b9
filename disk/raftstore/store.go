package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/hashicorp/raft"

	"github.com/sluicemq/sluice/disk"
)

// Key layout: "raft/log/" + the entry's index (8 bytes, big-endian, so key order is
// index order), and "raft/stable/" + the stable store's key.
const (
	logPrefix    = "raft/log/"
	stablePrefix = "raft/stable/"
)

// ErrKeyNotFound is what the stable store returns for a key never set. hashicorp/raft
// recognises a missing term or vote by this exact message ("not found").
var ErrKeyNotFound = errors.New("not found")

// Store is a raft.LogStore and raft.StableStore over a pebble state store. It is safe
// for concurrent use (pebble is). It does not own the state store: closing it is the
// caller's business.
type Store struct {
	st *disk.PebbleState
}

var (
	_ raft.LogStore    = (*Store)(nil)
	_ raft.StableStore = (*Store)(nil)
)

// New returns the raft stores over st.
func New(st *disk.PebbleState) *Store { return &Store{st: st} }

// FirstIndex returns the first index in the log, 0 when it is empty.
func (s *Store) FirstIndex() (uint64, error) { return s.edge(true) }

// LastIndex returns the last index in the log, 0 when it is empty.
func (s *Store) LastIndex() (uint64, error) { return s.edge(false) }

func (s *Store) edge(first bool) (uint64, error) {
	var (
		k   []byte
		ok  bool
		err error
	)
	if first {
		k, _, ok, err = s.st.First([]byte(logPrefix))
	} else {
		k, _, ok, err = s.st.Last([]byte(logPrefix))
	}
	if err != nil || !ok {
		return 0, err
	}
	return indexOf(k)
}

// GetLog reads the entry at index into out; raft.ErrLogNotFound when there is none.
func (s *Store) GetLog(index uint64, out *raft.Log) error {
	v, ok, err := s.st.Get(logKey(index))
	if err != nil {
		return err
	}
	if !ok {
		return raft.ErrLogNotFound
	}
	if err := decodeLog(v, out); err != nil {
		return fmt.Errorf("raft log entry %d: %w", index, err)
	}
	out.Index = index
	return nil
}

// StoreLog stores one entry, durably.
func (s *Store) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs stores entries in one synced commit: all of them are durable when it
// returns nil. An error leaves them in doubt (pebble then fails every later write
// until a restart, and raft steps down).
func (s *Store) StoreLogs(logs []*raft.Log) error {
	var b disk.StateBatch
	for _, l := range logs {
		b.Set(logKey(l.Index), encodeLog(l))
	}
	return s.st.Commit(&b)
}

// DeleteRange removes the entries min..max, both included, durably.
func (s *Store) DeleteRange(min, max uint64) error {
	if min > max {
		return nil
	}
	end := []byte("raft/log0") // "raft/log/" with its last byte incremented: past every entry
	if max < math.MaxUint64 {
		end = logKey(max + 1)
	}
	var b disk.StateBatch
	b.DeleteRange(logKey(min), end)
	return s.st.Commit(&b)
}

// Set stores a stable value, durably.
func (s *Store) Set(key, val []byte) error {
	return s.st.Set(stableKey(key), append([]byte(nil), val...))
}

// Get returns a stable value; ErrKeyNotFound when it was never set.
func (s *Store) Get(key []byte) ([]byte, error) {
	v, ok, err := s.st.Get(stableKey(key))
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, ErrKeyNotFound
	}
	return v, nil
}

// SetUint64 stores a stable number, durably.
func (s *Store) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 returns a stable number; ErrKeyNotFound when it was never set.
func (s *Store) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("raft stable key %q: %d bytes, want 8", key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

func logKey(index uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(logPrefix), index)
}

func stableKey(key []byte) []byte { return append([]byte(stablePrefix), key...) }

func indexOf(k []byte) (uint64, error) {
	if len(k) != len(logPrefix)+8 {
		return 0, fmt.Errorf("raft log key %q: want %d bytes", k, len(logPrefix)+8)
	}
	return binary.BigEndian.Uint64(k[len(logPrefix):]), nil
}

// Entry encoding, version 1: version byte, term (8 bytes), type (1), appended-at in
// unix nanoseconds (8, signed; 0 when unset), then data and extensions, each as a
// uvarint length and the bytes. The index is the key.
const encVersion = 1

func encodeLog(l *raft.Log) []byte {
	b := make([]byte, 0, 1+8+1+8+2*binary.MaxVarintLen64+len(l.Data)+len(l.Extensions))
	b = append(b, encVersion)
	b = binary.BigEndian.AppendUint64(b, l.Term)
	b = append(b, byte(l.Type))
	var at int64
	if !l.AppendedAt.IsZero() {
		at = l.AppendedAt.UnixNano()
	}
	b = binary.BigEndian.AppendUint64(b, uint64(at))
	b = binary.AppendUvarint(b, uint64(len(l.Data)))
	b = append(b, l.Data...)
	b = binary.AppendUvarint(b, uint64(len(l.Extensions)))
	return append(b, l.Extensions...)
}

var errCorrupt = errors.New("corrupt entry")

func decodeLog(b []byte, out *raft.Log) error {
	if len(b) < 18 || b[0] != encVersion {
		return errCorrupt
	}
	out.Term = binary.BigEndian.Uint64(b[1:])
	out.Type = raft.LogType(b[9])
	out.AppendedAt = time.Time{}
	if at := int64(binary.BigEndian.Uint64(b[10:])); at != 0 {
		out.AppendedAt = time.Unix(0, at)
	}
	rest := b[18:]
	var err error
	if out.Data, rest, err = chunk(rest); err != nil {
		return err
	}
	if out.Extensions, rest, err = chunk(rest); err != nil {
		return err
	}
	if len(rest) != 0 {
		return errCorrupt
	}
	return nil
}

// chunk splits a uvarint-length-prefixed byte string off b; nil when it is empty.
func chunk(b []byte) (data, rest []byte, err error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return nil, nil, errCorrupt
	}
	if n == 0 {
		return nil, b[w:], nil
	}
	return b[w : w+int(n)], b[w+int(n):], nil
}
