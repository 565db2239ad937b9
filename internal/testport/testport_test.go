package testport

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRangeBelowEphemeral(t *testing.T) {
	lo, hi := rangeBelow("32768\t60999\n")
	require.Equal(t, 32768-span, lo)
	require.Equal(t, 32768, hi)
	lo, hi = rangeBelow("5000 60999")
	require.Equal(t, 1024, lo, "never below the privileged ports")
	require.Equal(t, 5000, hi)
	for _, bad := range []string{"", "x y", "1000 2000", "1 2 3"} {
		lo, hi = rangeBelow(bad)
		require.Zero(t, lo, bad)
		require.Zero(t, hi, bad)
	}
}

func TestPickIsFreeOutsideTheEphemeralRangeAndNeverRepeats(t *testing.T) {
	lo, hi := pickRange()
	seen := map[int]bool{}
	for range 50 {
		p, err := Pick()
		require.NoError(t, err)
		require.False(t, seen[p], "port %d handed out twice", p)
		seen[p] = true
		if hi > lo {
			require.GreaterOrEqual(t, p, lo)
			require.Less(t, p, hi)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		require.NoError(t, err, "port %d must be free when handed out", p)
		require.NoError(t, l.Close())
	}
}
