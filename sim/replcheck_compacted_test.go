package sim

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// compactedDiff accepts a record the other replica's cleaner removed (a later record of
// its key there) and refuses different records at one offset or a key's lost last
// record.
func TestCompactedDiffTellsCleaningFromDivergence(t *testing.T) {
	rec := func(k, v string) keyedRecord { return keyedRecord{key: []byte(k), value: []byte(v)} }
	lead := compactedLog{records: map[int64]keyedRecord{1: rec("a", "1"), 2: rec("b", "1"),
		3: rec("a", "2")}, last: map[string]int64{"a": 3, "b": 2}}
	cleaned := compactedLog{records: map[int64]keyedRecord{2: rec("b", "1"), 3: rec("a", "2")},
		last: map[string]int64{"a": 3, "b": 2}}
	require.Empty(t, compactedDiff(lead, cleaned, "leader", "replica"))
	require.Empty(t, compactedDiff(cleaned, lead, "replica", "leader"))

	lost := compactedLog{records: map[int64]keyedRecord{1: rec("a", "1"), 3: rec("a", "2")},
		last: map[string]int64{"a": 3}}
	require.Contains(t, compactedDiff(lead, lost, "leader", "replica"), "offset 2")

	other := compactedLog{records: map[int64]keyedRecord{2: rec("b", "2"), 3: rec("a", "2")},
		last: map[string]int64{"a": 3, "b": 2}}
	require.Contains(t, compactedDiff(lead, other, "leader", "replica"), "different records")
}
