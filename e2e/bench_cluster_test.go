package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBenchClusterMeasuresFailover runs `sluice bench cluster` as make bench does, with
// one round of each kind: it starts three node processes, reports an RF=3 acks=all
// throughput figure, kills a partition leader (-9), stops one (SIGTERM) and kills the
// active controller, each time measuring until the producer's next acknowledgement,
// and restarts the node. The figures must be there and plausible: a failover takes
// some time, and no more than the rounds' bound.
func TestBenchClusterMeasuresFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("three node processes, killed and restarted")
	}
	base := freeDevBasePort(t)
	code, out, _ := runSluice(t, 5*time.Minute, nil, "bench", "cluster", "--nodes", "3",
		"--base-port", strconv.Itoa(base), "--kills", "1", "--shutdowns", "1",
		"--controller-kills", "1", "--records", "3000", "--steps", "acksall_p1,consume",
		"--round-bound", "60s", "--data", filepath.Join(t.TempDir(), "bench"))
	require.Equal(t, 0, code, out)
	require.Regexp(t, `FIGURE system=sluice test=produce_cluster3_acksall_p1 .* acked=3000 `+
		`failed=0`, out)
	require.Regexp(t, `FIGURE system=sluice test=cluster3_consume .* records=3000`, out)
	for _, kind := range []string{"kill9", "shutdown", "kill9_controller"} {
		m := regexp.MustCompile(fmt.Sprintf(`FIGURE system=sluice test=failover_%s nodes=3 `+
			`rounds=1 p50_ms=(\d+) max_ms=(\d+) min_ms=(\d+)`, kind)).FindStringSubmatch(out)
		require.NotNil(t, m, "no %s figure in:\n%s", kind, out)
		p50, _ := strconv.Atoi(m[1])
		require.Positive(t, p50, "%s: a failover takes time", kind)
		require.Less(t, p50, 60_000, kind)
		require.Equal(t, m[1], m[2], "one round: p50 is the max")
	}
}
