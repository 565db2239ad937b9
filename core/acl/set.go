package acl

import (
	"cmp"
	"slices"
	"strings"
)

// Set is a set of bindings, indexed for the authorizer: literal bindings by resource,
// prefixed ones by resource type. The zero value is not usable: NewSet.
type Set struct {
	all      map[Binding]struct{}
	literal  map[resKey][]Binding
	prefixed map[ResourceType][]Binding
}

type resKey struct {
	t    ResourceType
	name string
}

// NewSet returns an empty set.
func NewSet() *Set {
	return &Set{all: map[Binding]struct{}{}, literal: map[resKey][]Binding{},
		prefixed: map[ResourceType][]Binding{}}
}

// Len is the number of bindings.
func (s *Set) Len() int { return len(s.all) }

// Has says whether b is in the set.
func (s *Set) Has(b Binding) bool {
	_, ok := s.all[b]
	return ok
}

// Add inserts b; false when it was there already.
func (s *Set) Add(b Binding) bool {
	if s.Has(b) {
		return false
	}
	s.all[b] = struct{}{}
	if b.Pattern == PatternPrefixed {
		s.prefixed[b.Type] = append(s.prefixed[b.Type], b)
	} else {
		k := resKey{b.Type, b.Name}
		s.literal[k] = append(s.literal[k], b)
	}
	return true
}

// Remove deletes b; false when it was not there.
func (s *Set) Remove(b Binding) bool {
	if !s.Has(b) {
		return false
	}
	delete(s.all, b)
	drop := func(bs []Binding) []Binding {
		i := slices.Index(bs, b)
		return slices.Delete(slices.Clone(bs), i, i+1)
	}
	if b.Pattern == PatternPrefixed {
		s.prefixed[b.Type] = drop(s.prefixed[b.Type])
		return true
	}
	k := resKey{b.Type, b.Name}
	if bs := drop(s.literal[k]); len(bs) > 0 {
		s.literal[k] = bs
	} else {
		delete(s.literal, k)
	}
	return true
}

// Sorted returns every binding in a fixed order (resource type, pattern, name,
// principal, host, operation, permission): what snapshots and DescribeAcls list.
func (s *Set) Sorted() []Binding {
	out := make([]Binding, 0, len(s.all))
	for b := range s.all {
		out = append(out, b)
	}
	slices.SortFunc(out, compare)
	return out
}

func compare(a, b Binding) int {
	return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Pattern, b.Pattern),
		strings.Compare(a.Name, b.Name), strings.Compare(a.Principal, b.Principal),
		strings.Compare(a.Host, b.Host), cmp.Compare(a.Operation, b.Operation),
		cmp.Compare(a.Permission, b.Permission))
}

// Matching returns the bindings whose pattern covers the resource t/name: literal ones
// of that name or of the wildcard name, and prefixed ones whose name starts it.
func (s *Set) Matching(t ResourceType, name string) []Binding {
	var out []Binding
	out = append(out, s.literal[resKey{t, name}]...)
	if name != Wildcard {
		out = append(out, s.literal[resKey{t, Wildcard}]...)
	}
	for _, b := range s.prefixed[t] {
		if strings.HasPrefix(name, b.Name) {
			out = append(out, b)
		}
	}
	return out
}

// OfType returns every binding of a resource type.
func (s *Set) OfType(t ResourceType) []Binding {
	var out []Binding
	for k, bs := range s.literal {
		if k.t == t {
			out = append(out, bs...)
		}
	}
	return append(out, s.prefixed[t]...)
}
