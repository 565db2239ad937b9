package net

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestWriteBufHoldsWhatWasAsked(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 10<<20).Draw(t, "n")
		b := getWriteBuf(n)
		require.Zero(t, len(b))
		require.GreaterOrEqual(t, cap(b), n)
		putWriteBuf(b)
	})
}

func TestPoolClassIsTheSmallestThatHolds(t *testing.T) {
	for _, c := range []struct{ n, shift int }{
		{0, 16}, {1, 16}, {64 << 10, 16}, {64<<10 + 1, 17}, {1 << 20, 20}, {1<<20 + 1, 21},
		{8 << 20, 23}, {8<<20 + 1, 24},
	} {
		require.Equal(t, c.shift, poolClassFor(c.n), "n=%d", c.n)
	}
}

func TestGrowWriteBufKeepsTheBytesSoFar(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		have := rapid.SliceOfN(rapid.Byte(), 0, 200<<10).Draw(t, "have")
		more := rapid.IntRange(0, 3<<20).Draw(t, "more")
		buf := append(make([]byte, 0, len(have)), have...)
		grown := growWriteBuf(buf, more)
		require.True(t, bytes.Equal(have, grown), "the bytes encoded so far are kept")
		require.GreaterOrEqual(t, cap(grown)-len(grown), more)
	})
}

// A buffer given back is handed out again for a request its class holds, so a writer
// that goes idle between two 1 MiB answers does not allocate (and zero) a new one.
func TestAGivenBackBufferIsReused(t *testing.T) {
	b := getWriteBuf(1 << 20)
	b = append(b, 1, 2, 3)
	putWriteBuf(b)
	reused := false
	for range 10 { // sync.Pool may drop entries (a GC between Put and Get)
		c := getWriteBuf(1<<20 - 5)
		require.Zero(t, len(c))
		if &c[:1][0] == &b[:1][0] {
			reused = true
			break
		}
		b = c
		putWriteBuf(b)
	}
	require.True(t, reused)
}
