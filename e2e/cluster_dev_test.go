package e2e

import (
	"errors"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDevClusterOfThreeNodes runs `sluice dev --nodes 3` as a user would, then checks
// what the issue asks a new user to see: kcat -L, `sluice topic describe` and `sluice
// cluster describe` against any node list every broker and each partition's leader,
// replicas and ISR. Ctrl-C stops every node; the same command with the same --data
// starts the same cluster again.
func TestDevClusterOfThreeNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("three node processes")
	}
	kcat := kcatPath(t)
	base := freeDevBasePort(t)
	data := filepath.Join(t.TempDir(), "cluster")
	addrs := []string{fmt.Sprintf("127.0.0.1:%d", base), fmt.Sprintf("127.0.0.1:%d", base+1),
		fmt.Sprintf("127.0.0.1:%d", base+2)}
	bootstrap := strings.Join(addrs, ",")

	dev := startDevCluster(t, data, base)
	code, out, _ := runSluice(t, 30*time.Second, nil, "topic", "create", "demo",
		"--partitions", "3", "--replication-factor", "3", "--config",
		"min.insync.replicas=2", "--bootstrap", bootstrap)
	require.Equal(t, 0, code, out)

	isr := regexp.MustCompile(`partition \d, leader [123], replicas: ([123]),([123]),([123]), ` +
		`isrs: [123],[123],[123]\n`)
	for _, a := range addrs {
		awaitOutput(t, 30*time.Second, func() (string, bool) {
			o, err := exec.Command(kcat, "-L", "-b", a, "-m", "5").CombinedOutput()
			s := string(o)
			return s, err == nil && strings.Contains(s, " 3 brokers:") &&
				len(isr.FindAllString(s, -1)) == 3
		})
		awaitOutput(t, 30*time.Second, func() (string, bool) {
			code, s, _ := runSluice(t, 30*time.Second, nil, "topic", "describe", "demo",
				"--bootstrap", a)
			return s, code == 0 && len(regexp.MustCompile(`(?m)^\d\s+[123]\s+\d,\d,\d\s+`+
				`\d,\d,\d\s+0\s+0\s+0$`).FindAllString(s, -1)) == 3
		})
		awaitOutput(t, 30*time.Second, func() (string, bool) {
			code, s, _ := runSluice(t, 30*time.Second, nil, "cluster", "describe",
				"--bootstrap", a)
			return s, code == 0 && len(regexp.MustCompile(`(?m)^[123]\s+127\.0\.0\.1:\d+\s+`+
				`-\s+live$`).FindAllString(s, -1)) == 3
		})
	}
	dev.interrupt(t)

	// The data was kept: the same command starts the same cluster, topic included.
	dev = startDevCluster(t, data, base)
	awaitOutput(t, 30*time.Second, func() (string, bool) {
		o, err := exec.Command(kcat, "-L", "-b", addrs[1], "-t", "demo", "-m", "5").
			CombinedOutput()
		return string(o), err == nil && len(isr.FindAllString(string(o), -1)) == 3
	})
	dev.interrupt(t)
}

// TestDevClusterWithQuorumTLS runs `sluice dev --nodes 3 --tls`: the metadata quorum
// runs over mutual TLS with throw-away certificates. The cluster forms (every broker
// registers through the quorum, so `sluice cluster describe` lists three live ones),
// serves an RF=3 acks=all topic, and the banner says the quorum is on TLS. (A peer
// from another CA is refused: runtime's TestQuorumRefusesAnotherCAsPeer.)
func TestDevClusterWithQuorumTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("three node processes")
	}
	base := freeDevBasePort(t)
	data := filepath.Join(t.TempDir(), "cluster")
	addrs := []string{fmt.Sprintf("127.0.0.1:%d", base), fmt.Sprintf("127.0.0.1:%d", base+1),
		fmt.Sprintf("127.0.0.1:%d", base+2)}
	bootstrap := strings.Join(addrs, ",")
	dev := startDevCluster(t, data, base, "--tls")
	banner, err := os.ReadFile(dev.out)
	require.NoError(t, err)
	require.Contains(t, string(banner), "mutual TLS", string(banner))

	awaitOutput(t, 30*time.Second, func() (string, bool) {
		code, s, _ := runSluice(t, 30*time.Second, nil, "cluster", "describe",
			"--bootstrap", addrs[2])
		return s, code == 0 && len(regexp.MustCompile(`(?m)^[123]\s+127\.0\.0\.1:\d+\s+`+
			`-\s+live$`).FindAllString(s, -1)) == 3
	})
	code, out, _ := runSluice(t, 30*time.Second, nil, "topic", "create", "secure",
		"--partitions", "1", "--replication-factor", "3", "--config",
		"min.insync.replicas=2", "--bootstrap", bootstrap)
	require.Equal(t, 0, code, out)
	awaitOutput(t, 30*time.Second, func() (string, bool) {
		code, s, _ := runSluice(t, 30*time.Second, []byte("one\ntwo\n"), "produce", "secure",
			"--bootstrap", bootstrap, "--acks", "all", "--timeout", "5s")
		return s, code == 0 && strings.Contains(s, "produced 2 record(s)")
	})
	code, out, _ = runSluice(t, 30*time.Second, nil, "consume", "secure",
		"--from-beginning", "--exit-at-end", "--bootstrap", bootstrap)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "one\ntwo\n")
	dev.interrupt(t)
}

type devProcess struct {
	cmd    *exec.Cmd
	out    string // stdout file
	waited chan struct{}
	pids   []int
}

// startDevCluster starts `sluice dev --nodes 3` and waits for its banner.
func startDevCluster(t *testing.T, data string, base int, extra ...string) *devProcess {
	t.Helper()
	dir := t.TempDir()
	d := &devProcess{out: filepath.Join(dir, "stdout"), waited: make(chan struct{})}
	stdout, err := os.Create(d.out)
	require.NoError(t, err)
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	require.NoError(t, err)
	d.cmd = exec.Command(sluiceBinary(t), append([]string{"dev", "--nodes", "3", "--data", data,
		"--base-port", strconv.Itoa(base)}, extra...)...)
	d.cmd.Stdout, d.cmd.Stderr = stdout, stderr
	require.NoError(t, d.cmd.Start())
	go func() { _ = d.cmd.Wait(); stdout.Close(); stderr.Close(); close(d.waited) }()
	t.Cleanup(func() {
		_ = d.cmd.Process.Kill() // its nodes get SIGTERM (Pdeathsig)
		<-d.waited
		for _, pid := range d.pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	pidRE := regexp.MustCompile(`(?m)^  node \d  127\.0\.0\.1:\d+  pid (\d+)$`)
	awaitOutput(t, 60*time.Second, func() (string, bool) {
		b, _ := os.ReadFile(d.out)
		select {
		case <-d.waited:
			e, _ := os.ReadFile(stderr.Name())
			t.Fatalf("sluice dev exited: %v\n%s\n%s", d.cmd.ProcessState, b, e)
		default:
		}
		return string(b), len(pidRE.FindAllSubmatch(b, -1)) == 3
	})
	b, _ := os.ReadFile(d.out)
	for _, m := range pidRE.FindAllSubmatch(b, -1) {
		pid, err := strconv.Atoi(string(m[1]))
		require.NoError(t, err)
		d.pids = append(d.pids, pid)
	}
	return d
}

// interrupt is Ctrl-C: sluice dev exits 0 and none of its nodes is left running.
func (d *devProcess) interrupt(t *testing.T) {
	t.Helper()
	require.NoError(t, d.cmd.Process.Signal(os.Interrupt))
	select {
	case <-d.waited:
	case <-time.After(45 * time.Second):
		t.Fatal("sluice dev still running 45s after SIGINT")
	}
	require.Equal(t, 0, d.cmd.ProcessState.ExitCode())
	for _, pid := range d.pids {
		err := syscall.Kill(pid, 0)
		require.True(t, errors.Is(err, syscall.ESRCH), "node pid %d still exists: %v", pid, err)
	}
	d.pids = nil // gone: the cleanup must not signal a pid reused since
}

// awaitOutput polls f every 200 ms until it reports done, failing after d with its
// last output.
func awaitOutput(t *testing.T, d time.Duration, f func() (string, bool)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		out, ok := f()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v; last output:\n%s", d, out)
		}
		time.Sleep(200 * time.Millisecond) // polling, bounded by the deadline
	}
}

// freeDevBasePort finds P with P..P+2 and P+100..P+102 free on 127.0.0.1.
func freeDevBasePort(t *testing.T) int {
	t.Helper()
	for try := 0; try < 50; try++ {
		base := 20000 + rand.Intn(20000)
		free := true
		for _, p := range []int{base, base + 1, base + 2, base + 100, base + 101, base + 102} {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				free = false
				break
			}
			l.Close()
		}
		if free {
			return base
		}
	}
	t.Fatal("no free base port")
	return 0
}
