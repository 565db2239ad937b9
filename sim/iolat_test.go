package sim

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A slow-disk spell slows only the part of the work done while it lasts (seed 4306: a
// recovery step begun just before a spell's end kept the node busy 20 s past the heal).
func TestSlowDiskSpellSlowsOnlyWhileItLasts(t *testing.T) {
	w := &World{now: 1000}
	w.cfg.Faults.SlowDiskFactor = 100
	n := &node{w: w}
	require.Equal(t, int64(500), n.slowed(500), "no spell: normal speed")

	n.slowUntil = 1000 + 10_000
	require.Equal(t, int64(5_000), n.slowed(50), "inside the spell: 100 times slower")
	// 100 units of work end exactly with the spell.
	require.Equal(t, int64(10_000), n.slowed(100))
	// 1_000_000 units: 100 done during the spell, the rest at normal speed after it.
	require.Equal(t, int64(10_000+1_000_000-100), n.slowed(1_000_000))

	w.cfg.Faults.SlowDiskFactor = 1
	require.Equal(t, int64(700), n.slowed(700), "a factor of 1 changes nothing")
}
