package disk

import (
	"bytes"
	"errors"
	"sort"
	"sync"
)

// StateStore is node-local key/value state: log start offsets, replica snapshots,
// segment creation times and the metadata log. Every write is durable when it returns.
type StateStore interface {
	// Get returns a copy of the value stored under key.
	Get(key []byte) ([]byte, bool, error)
	// Set stores val under key; durable on return.
	Set(key, val []byte) error
	// Delete removes key (no error when absent); durable on return.
	Delete(key []byte) error
	// Scan calls fn for every key with the prefix, in key order. k and v are valid only
	// during the call. fn may call Set and Delete; whether Scan then sees those changes is
	// unspecified. An error from fn stops the scan and is returned.
	Scan(prefix []byte, fn func(k, v []byte) error) error
	Close() error
}

// ErrStateClosed is returned by a StateStore used after Close.
var ErrStateClosed = errors.New("state store closed")

// MemState is an in-memory StateStore: a map plus a sorted key list. Every write is
// durable at once, so across a simulated crash the simulator keeps the same MemState.
type MemState struct {
	mu     sync.Mutex
	vals   map[string][]byte
	keys   []string // sorted
	closed bool
}

var _ StateStore = (*MemState)(nil)

// NewMemState returns an empty MemState.
func NewMemState() *MemState { return &MemState{vals: map[string][]byte{}} }

// Clone returns an independent copy (e.g. to fork a simulated node's disk).
func (s *MemState) Clone() *MemState {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &MemState{vals: make(map[string][]byte, len(s.vals)), keys: append([]string(nil), s.keys...)}
	for k, v := range s.vals {
		c.vals[k] = v // values are never mutated in place
	}
	return c
}

// Get implements StateStore.
func (s *MemState) Get(key []byte) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false, ErrStateClosed
	}
	v, ok := s.vals[string(key)]
	if !ok {
		return nil, false, nil
	}
	return append([]byte(nil), v...), true, nil
}

// Set implements StateStore.
func (s *MemState) Set(key, val []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrStateClosed
	}
	k := string(key)
	if _, ok := s.vals[k]; !ok {
		i := sort.SearchStrings(s.keys, k)
		s.keys = append(s.keys, "")
		copy(s.keys[i+1:], s.keys[i:])
		s.keys[i] = k
	}
	s.vals[k] = append([]byte(nil), val...)
	return nil
}

// Delete implements StateStore.
func (s *MemState) Delete(key []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrStateClosed
	}
	k := string(key)
	if _, ok := s.vals[k]; !ok {
		return nil
	}
	delete(s.vals, k)
	i := sort.SearchStrings(s.keys, k)
	s.keys = append(s.keys[:i], s.keys[i+1:]...)
	return nil
}

// Scan implements StateStore. It copies the matching pairs first and calls fn without
// the lock, so fn may write to the store.
func (s *MemState) Scan(prefix []byte, fn func(k, v []byte) error) error {
	type kv struct{ k, v []byte }
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrStateClosed
	}
	var match []kv
	for i := sort.SearchStrings(s.keys, string(prefix)); i < len(s.keys); i++ {
		k := s.keys[i]
		if !bytes.HasPrefix([]byte(k), prefix) {
			break
		}
		match = append(match, kv{[]byte(k), append([]byte(nil), s.vals[k]...)})
	}
	s.mu.Unlock()
	for _, p := range match {
		if err := fn(p.k, p.v); err != nil {
			return err
		}
	}
	return nil
}

// Close implements StateStore.
func (s *MemState) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
