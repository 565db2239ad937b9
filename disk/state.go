package disk

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
)

// StateStore is node-local key/value state: log start offsets, replica snapshots,
// segment creation times and the metadata log. Every write is durable when it returns
// nil. A write that returns an error is in doubt: it may or may not be seen by reads
// and may or may not survive a restart; the store may then refuse every later write
// until the node restarts (docs/storage.md, "Node-local state").
type StateStore interface {
	// Get returns a copy of the value stored under key.
	Get(key []byte) ([]byte, bool, error)
	// Set stores val under key; durable when it returns nil.
	Set(key, val []byte) error
	// Delete removes key (no error when absent); durable when it returns nil.
	Delete(key []byte) error
	// Scan calls fn for every key with the prefix, in key order. k and v are valid only
	// during the call. fn may call Set and Delete; whether Scan then sees those changes is
	// unspecified. An error from fn stops the scan and is returned.
	Scan(prefix []byte, fn func(k, v []byte) error) error
	Close() error
}

// ErrStateClosed is returned by a StateStore used after Close.
var ErrStateClosed = errors.New("state store closed")

// MemState is an in-memory StateStore for tests and the simulator, modelled on
// PebbleState's durability (docs/storage.md, "Node-local state"): a write that returns
// nil is durable; a write that failed is in doubt (it may or may not survive a restart)
// and leaves the store failed, every later write returning the same error, until
// Reopen; a write made without sync (the "disk/state-nosync" mutant) waits in memory
// and a restart keeps only a prefix of such writes, as pebble's write-ahead log keeps
// a prefix of its records. Reads see every write applied so far.
type MemState struct {
	mu     sync.Mutex
	vals   map[string][]byte // what Get and Scan see
	keys   []string          // sorted
	dur    map[string][]byte // what a restart starts from, before the pending writes
	pend   []stateWrite      // writes after dur not known durable, oldest first
	fault  func(op Op, key string) error
	failed error
	closed bool
}

// stateWrite is one write in doubt: a Set, or a Delete (del).
type stateWrite struct {
	key string
	val []byte
	del bool
}

var _ StateStore = (*MemState)(nil)

// NewMemState returns an empty MemState.
func NewMemState() *MemState {
	return &MemState{vals: map[string][]byte{}, dur: map[string][]byte{}}
}

// Clone returns an independent copy (e.g. to fork a simulated node's disk).
func (s *MemState) Clone() *MemState {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &MemState{vals: maps.Clone(s.vals), keys: append([]string(nil), s.keys...),
		dur: maps.Clone(s.dur), pend: append([]stateWrite(nil), s.pend...),
		fault: s.fault, failed: s.failed}
	return c // values are never mutated in place, so they may be shared
}

// SetFault installs a function that may fail Set and Delete: it is asked with OpWrite
// before the write reaches the log and with OpSync before it is synced (a write whose
// sync failed is visible to reads, one whose log write failed is not, as in pebble).
// nil removes it. It is called with the store's lock held.
func (s *MemState) SetFault(f func(op Op, key string) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
}

// Reopen is a restart of the store (a process restart or a power loss): of the writes
// in doubt a random prefix survives and the rest are lost, what survived is durable
// from then on, and a failed store works again. r is drawn only when writes are in
// doubt, so a run without failed writes keeps its random sequence.
func (s *MemState) Reopen(r CrashRand) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := 0
	if len(s.pend) > 0 {
		keep = r.Intn(len(s.pend) + 1)
	}
	for _, w := range s.pend[:keep] {
		if w.del {
			delete(s.dur, w.key)
		} else {
			s.dur[w.key] = w.val
		}
	}
	s.pend, s.failed, s.closed = nil, nil, false
	s.vals = maps.Clone(s.dur)
	s.keys = slices.Sorted(maps.Keys(s.vals))
}

// InDoubt returns how many writes a restart may lose.
func (s *MemState) InDoubt() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pend)
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
	return s.write(stateWrite{key: string(key), val: append([]byte(nil), val...)})
}

// Delete implements StateStore.
func (s *MemState) Delete(key []byte) error {
	return s.write(stateWrite{key: string(key), del: true})
}

// write runs one commit: the log write, the apply, the sync.
func (s *MemState) write(w stateWrite) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrStateClosed
	case s.failed != nil:
		return s.failed
	}
	if err := s.check(OpWrite, w); err != nil {
		return err
	}
	s.apply(w)
	if mutantOn("state-nosync") {
		s.pend = append(s.pend, w)
		return nil
	}
	if err := s.check(OpSync, w); err != nil {
		return err
	}
	// A synced write makes every write before it durable too (one log, in order).
	for _, p := range s.pend {
		s.applyDurable(p)
	}
	s.pend = s.pend[:0]
	s.applyDurable(w)
	return nil
}

// check asks the fault function about w; a failure leaves w in doubt and the store
// failed.
func (s *MemState) check(op Op, w stateWrite) error {
	if s.fault == nil {
		return nil
	}
	err := s.fault(op, w.key)
	if err == nil {
		return nil
	}
	s.pend = append(s.pend, w)
	s.failed = fmt.Errorf("state store failed, restart the node once the cause is fixed: "+
		"%s of %q: %w", op, w.key, err)
	return s.failed
}

func (s *MemState) applyDurable(w stateWrite) {
	if w.del {
		delete(s.dur, w.key)
		return
	}
	s.dur[w.key] = w.val
}

// apply makes w visible to reads.
func (s *MemState) apply(w stateWrite) {
	_, had := s.vals[w.key]
	i := sort.SearchStrings(s.keys, w.key)
	switch {
	case w.del && had:
		delete(s.vals, w.key)
		s.keys = append(s.keys[:i], s.keys[i+1:]...)
	case w.del:
	default:
		if !had {
			s.keys = slices.Insert(s.keys, i, w.key)
		}
		s.vals[w.key] = w.val
	}
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
