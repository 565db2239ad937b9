package runtime

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestPlanFDsSplitsTheLimitAndLowersWhatDoesNotFit(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	lg := zap.New(core)

	_, err := planFDs(211, 10000, 0, lg)
	require.ErrorContains(t, err, "RLIMIT_NOFILE) is 211; a node needs at least 212")
	b, err := planFDs(212, 10000, 0, lg)
	require.NoError(t, err)
	require.Equal(t, fdBudget{soft: 212, connections: 16, logFiles: 32}, b)

	b, err = planFDs(1024, 10000, 0, lg)
	require.NoError(t, err)
	require.Equal(t, 430, b.connections)
	require.Equal(t, 430, b.logFiles)
	require.Equal(t, 2, logs.FilterMessageSnippet("max.connections").Len()) // 212 and 1024

	// A large limit keeps the configured connections and gives the rest to the cache,
	// up to its cap.
	b, err = planFDs(1<<20, 10000, 0, lg)
	require.NoError(t, err)
	require.Equal(t, 10000, b.connections)
	require.Equal(t, maxDerivedLogFiles, b.logFiles)

	// A configured cache size is kept when it fits, connections take the rest...
	b, err = planFDs(1024, 100, 500, lg)
	require.NoError(t, err)
	require.Equal(t, fdBudget{soft: 1024, connections: 100, logFiles: 500}, b)
	// ...and lowered, with a warning, when it does not.
	b, err = planFDs(1024, 100, 5000, lg)
	require.NoError(t, err)
	require.Equal(t, 16, b.connections)
	require.Equal(t, 844, b.logFiles)
	require.Equal(t, 1, logs.FilterMessageSnippet("sluice.log.max.open.files").Len())
	require.Equal(t, 3, logs.FilterMessageSnippet("max.connections").Len())
	require.LessOrEqual(t, fdFixedReserve+fdPebbleReserve+b.connections+b.logFiles, 1024)
}

func TestDerivePartitions(t *testing.T) {
	require.Equal(t, 430*16, derivePartitions(430, 0))
	require.Equal(t, 430*16, derivePartitions(430, 24<<30))
	require.Equal(t, (1<<30)/4/bytesPerPartition, derivePartitions(9918, 1<<30))
}
