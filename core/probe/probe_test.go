package probe

import "testing"

func TestSetCountsPerSet(t *testing.T) {
	id := Register("probe/test")
	a, b := NewSet(), NewSet()
	a.Hit(id)
	a.Hit(id)
	b.Hit(id)
	var none *Set
	none.Hit(id) // a nil set counts nothing and does not panic
	if a.Count(id) != 2 || b.Count(id) != 1 || none.Count(id) != 0 {
		t.Fatalf("counts: a=%d b=%d nil=%d", a.Count(id), b.Count(id), none.Count(id))
	}
	a.Add(b)
	if a.Count(id) != 3 {
		t.Fatalf("after Add: %d", a.Count(id))
	}
	if Names()[id] != "probe/test" {
		t.Fatalf("name: %q", Names()[id])
	}
}
