package e2e

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
)

// endlessLines is stdin that never ends: one short line after another.
type endlessLines struct{}

func (endlessLines) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = "hello\n"[i%6]
	}
	return len(p) - len(p)%6, nil
}

// Issue 6 item 7: `sluice produce` kept reading stdin for 11 minutes after the node died
// (kgo's delivery timeout does not fire while no broker can be reached). It must stop
// within about --timeout and say that the node is unreachable.
func TestProduceStopsWhenTheNodeDies(t *testing.T) {
	n := startNode(t, "")
	_, err := kadm.NewClient(cliTestClient(t, n.addr, "")).CreateTopic(ctx(t, 10*time.Second),
		1, 1, nil, "dies")
	require.NoError(t, err)
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(c, sluiceBinary(t), "produce", "dies", "--bootstrap", n.addr,
		"--timeout", "2s")
	cmd.Stdin = endlessLines{}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	time.Sleep(time.Second)
	n.kill()
	killed := time.Now()
	err = cmd.Wait()
	require.NoError(t, c.Err(), "produce still running 60s later:\n%s", out.String())
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "exit status: %v\n%s", err, out.String())
	require.Equal(t, 1, ee.ExitCode(), out.String())
	require.Less(t, time.Since(killed), 10*time.Second)
	require.Contains(t, out.String(), "records were not acknowledged within 2s: node "+
		n.addr+" unreachable: connection refused")
}
