package probe

import "fmt"

// ID names one registered probe: its index in the table.
type ID uint16

// names is the probe table, filled by Register during package initialisation only.
var names []string

// Register adds a probe named "area/what" to the table and returns its ID. Call it
// from a package-level variable initialiser; a name registered twice panics.
func Register(name string) ID {
	for _, n := range names {
		if n == name {
			panic(fmt.Sprintf("probe %q registered twice", name))
		}
	}
	names = append(names, name)
	return ID(len(names) - 1)
}

// Names returns every registered probe name, indexed by ID.
func Names() []string { return append([]string(nil), names...) }

// Set counts the hits of every probe for one driver (one simulated world).
type Set struct{ hits []uint64 }

// NewSet returns an empty Set sized to the probe table.
func NewSet() *Set { return &Set{hits: make([]uint64, len(names))} }

// Hit counts one pass through probe id. A nil Set counts nothing.
func (s *Set) Hit(id ID) {
	if s != nil {
		s.hits[id]++
	}
}

// Count returns how often probe id was hit.
func (s *Set) Count(id ID) uint64 {
	if s == nil {
		return 0
	}
	return s.hits[id]
}

// Add adds o's counts to s (aggregating worlds).
func (s *Set) Add(o *Set) {
	for i, n := range o.hits {
		s.hits[i] += n
	}
}
