package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// smallDisk mounts a tmpfs of size bytes ("4m") on a temp dir and unmounts it at the
// end. It needs root (CAP_SYS_ADMIN); elsewhere the test is skipped, saying why.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).
		CombinedOutput()
	if err != nil {
		t.Skipf("needs a small filesystem: mount -t tmpfs failed (run as root to test "+
			"a full disk): %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fillDisk writes a file in dir until the filesystem is full and returns its path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "ballast")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	block := make([]byte, 64<<10)
	for {
		if _, err := f.Write(block); err != nil {
			require.ErrorIs(t, err, syscall.ENOSPC)
			break
		}
	}
	for _, n := range []int{4096, 512, 1} { // the last partial blocks
		for {
			if _, err := f.Write(block[:n]); err != nil {
				break
			}
		}
	}
	return path
}

// runSluice runs the binary with a bound and returns its exit code and output.
func runSluice(t *testing.T, bound time.Duration, stdin []byte, args ...string) (int,
	string, time.Duration) {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cmd := exec.CommandContext(c, sluiceBinary(t), args...)
	cmd.Stdin = bytes.NewReader(stdin)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	require.NoError(t, c.Err(), "sluice %s did not exit within %s; output:\n%s",
		strings.Join(args, " "), bound, outputTail(out))
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out), took
	}
	require.NoError(t, err)
	return 0, string(out), took
}

func outputTail(b []byte) string {
	if len(b) > 4000 {
		return "..." + string(b[len(b)-4000:])
	}
	return string(b)
}

// Issue 6 item 4: on a full filesystem the node retried its state store's flush
// forever (thousands of log lines a second, signals ignored). It must exit at once
// with one message naming the directory and the space it needs, and start again once
// space is freed, with its data.
func TestFullDiskAtStartExitsWithOneMessage(t *testing.T) {
	disk := smallDisk(t, "4m")
	data := filepath.Join(disk, "data")
	n := startNode(t, data)
	cl := cliTestClient(t, n.addr, "t")
	rec := &kgo.Record{Value: []byte("kept")}
	require.NoError(t, cl.ProduceSync(ctx(t, 10*time.Second), rec).FirstErr())
	cl.Close()
	require.NoError(t, n.stop())
	ballast := fillDisk(t, disk)

	code, out, took := runSluice(t, 20*time.Second, nil, "node", "--http-listen=", "--data", data,
		"--listen", "127.0.0.1:0")
	require.Equal(t, 1, code, out)
	require.Less(t, took, 5*time.Second)
	require.Contains(t, out, "sluice node: disk full: "+filepath.Join(data, "state")+
		" needs at least 1.0 MiB free to start and its filesystem has ")
	require.Less(t, strings.Count(out, "\n"), 10, "no flood of log lines:\n%s",
		outputTail([]byte(out)))

	require.NoError(t, os.Remove(ballast))
	n = startNode(t, data)
	require.Equal(t, []string{"kept"}, consumeAll(t, n.addr, "t"))
}

// While running, a full disk reaches producers as KAFKA_STORAGE_ERROR (sluice produce
// used to report only a timeout), and producing works again once space returns.
func TestFullDiskWhileRunningIsAStorageErrorAndHeals(t *testing.T) {
	disk := smallDisk(t, "8m")
	n := startNode(t, filepath.Join(disk, "data"))
	adm := kadm.NewClient(cliTestClient(t, n.addr, ""))
	_, err := adm.CreateTopic(ctx(t, 10*time.Second), 1, 1, nil, "full")
	require.NoError(t, err)
	ballast := fillDisk(t, disk)

	lines := bytes.Repeat([]byte(strings.Repeat("x", 1000)+"\n"), 2000)
	code, out, _ := runSluice(t, 30*time.Second, lines, "produce", "full", "--bootstrap",
		n.addr, "--timeout", "3s")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "KAFKA_STORAGE_ERROR", out)

	require.NoError(t, os.Remove(ballast))
	deadline := time.Now().Add(15 * time.Second)
	for {
		code, out, _ = runSluice(t, 30*time.Second, []byte("a\nb\n"), "produce", "full",
			"--bootstrap", n.addr, "--timeout", "3s")
		if code == 0 || time.Now().After(deadline) {
			break
		}
	}
	require.Equal(t, 0, code, "the node did not recover once space returned:\n%s", out)
	require.Contains(t, out, "produced 2 record(s)")
}

// Issue 6 item 7: a second node on the same data directory said "resource temporarily
// unavailable"; it must say the directory is in use by another process.
func TestSecondNodeOnSameDataDirSaysInUse(t *testing.T) {
	n := startNode(t, "")
	code, out, took := runSluice(t, 20*time.Second, nil, "node", "--http-listen=", "--data", n.data,
		"--listen", "127.0.0.1:0")
	require.Equal(t, 1, code, out)
	require.Less(t, took, 5*time.Second)
	require.Contains(t, out, "sluice node: data directory "+n.data+" is in use by another "+
		"process (it holds the lock on "+filepath.Join(n.data, "state", "LOCK")+")")
}

// cliTestClient is a franz-go client of addr producing to topic (none when empty),
// closed at the end of the test.
func cliTestClient(t *testing.T, addr, topic string) *kgo.Client {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation()}
	if topic != "" {
		opts = append(opts, kgo.DefaultProduceTopic(topic))
	}
	cl, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// SIGTERM during a start that is stuck in the state store (here its manifest is a FIFO
// nobody writes, as a hung disk would be) ends the start at once. Before, the signal
// was caught and ignored until the start finished, which on a full disk was never.
func TestSignalDuringStartStopsTheNode(t *testing.T) {
	data := t.TempDir()
	state := filepath.Join(data, "state")
	require.NoError(t, os.MkdirAll(state, 0o755))
	for _, f := range []string{"marker.format-version.000001.013",
		"marker.manifest.000001.MANIFEST-000001"} {
		require.NoError(t, os.WriteFile(filepath.Join(state, f), nil, 0o644))
	}
	require.NoError(t, syscall.Mkfifo(filepath.Join(state, "MANIFEST-000001"), 0o644))

	cmd := exec.Command(sluiceBinary(t), "node", "--data", data, "--listen", "127.0.0.1:0",
		"--http-listen=")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("the node was expected to hang in its start, it exited: %v\n%s", err, out.String())
	case <-time.After(time.Second):
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-done:
		var ee *exec.ExitError
		require.True(t, errors.As(err, &ee), "%v", err)
		require.Equal(t, 1, ee.ExitCode())
		require.Contains(t, out.String(), "sluice node: start interrupted by a signal")
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("SIGTERM did not stop a node stuck in its start within 5s:\n%s", out.String())
	}
}
