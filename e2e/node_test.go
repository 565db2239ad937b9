package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/internal/testport"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// sluiceBinary builds cmd/sluice once per test run.
func sluiceBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		touchSources()
		dir, err := os.MkdirTemp("", "sluice-e2e-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "sluice")
		out, err := exec.Command("go", "build", "-o", binPath, "../cmd/sluice").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return binPath
}

// touchSources stats every Go source of the module. The go command's test cache
// records files a test looks at, so a cached e2e result is reused only while the code
// the binary is built from is unchanged.
func touchSources() {
	_ = filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "data" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (filepath.Ext(path) == ".go" || d.Name() == "go.mod") {
			_, _ = os.Stat(path)
		}
		return nil
	})
}

// freePort is a free loopback port outside the ephemeral range (internal/testport):
// a node killed and restarted on it must find it free again, which a port any
// outgoing connection may take as its local port does not promise under load.
func freePort(t *testing.T) int {
	t.Helper()
	port, err := testport.Pick()
	require.NoError(t, err)
	return port
}

// node is one sluice node process.
type node struct {
	t    *testing.T
	addr string
	data string
	cmd  *exec.Cmd
	log  *os.File
	// waited is closed once the process was reaped, for nodes whose Wait runs in a
	// goroutine (startLimitedNode); nil otherwise.
	waited chan struct{}
}

// startNode starts `sluice node` on a free port over data (a new temp dir when empty)
// and waits until it accepts connections.
func startNode(t *testing.T, data string, extraArgs ...string) *node {
	t.Helper()
	if data == "" {
		data = t.TempDir()
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	logf, err := os.CreateTemp(t.TempDir(), "node-*.log")
	require.NoError(t, err)
	args := append([]string{"node", "--id", "1", "--listen", addr, "--data", data,
		"--http-listen="}, extraArgs...)
	cmd := exec.Command(sluiceBinary(t), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	n := &node{t: t, addr: addr, data: data, cmd: cmd, log: logf}
	t.Cleanup(n.kill)
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return n
		}
		time.Sleep(50 * time.Millisecond)
	}
	n.kill()
	out, _ := os.ReadFile(logf.Name())
	t.Fatalf("node did not listen on %s within 15s; its log:\n%s", addr, out)
	return nil
}

// kill stops the process with SIGKILL (no chance to sync anything) and reaps it.
func (n *node) kill() {
	if n.waited != nil {
		_ = n.cmd.Process.Signal(syscall.SIGKILL)
		<-n.waited
		return
	}
	if n.cmd.ProcessState != nil {
		return
	}
	_ = n.cmd.Process.Signal(syscall.SIGKILL)
	_ = n.cmd.Wait()
}

// stop sends SIGTERM and waits for a graceful exit.
func (n *node) stop() error {
	if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- n.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		n.kill()
		return fmt.Errorf("node did not stop within 20s of SIGTERM")
	}
}

func (n *node) logText() string {
	b, _ := os.ReadFile(n.log.Name())
	return string(b)
}

func ctx(t *testing.T, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return c
}
