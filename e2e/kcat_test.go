package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// kcatPath finds kcat. CI installs it (.ci/run); a developer machine without it skips
// these tests with a message saying how to get it.
func kcatPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("kcat is not installed but CI must run the kcat tests (.ci/run installs it)")
		}
		t.Skip("kcat not installed (apt-get install kcat)")
	}
	return p
}

// kcat runs kcat with args, feeding stdin, bounded by timeout.
func kcat(t *testing.T, timeout time.Duration, stdin []byte, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx(t, timeout), kcatPath(t), args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("kcat %v: %w\nstderr:\n%s", args, err, errb.String())
	}
	return out.String(), err
}

// kcatProduceConsume produces a:1 and b:2 to topic with kcat's connection args and
// reads them back from the beginning.
func kcatProduceConsume(t *testing.T, topic string, args ...string) {
	t.Helper()
	args = slices.Clip(args)
	_, err := kcat(t, 30*time.Second, []byte("a:1\nb:2\n"), append(args, "-t", topic, "-P",
		"-K:")...)
	require.NoError(t, err)
	out, err := kcat(t, 30*time.Second, nil, append(args, "-t", topic, "-C", "-e", "-o",
		"beginning", "-f", "%k:%s\n")...)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"a:1", "b:2"}, strings.Fields(out))
}

func TestKcatMetadataListsBrokerAndTopics(t *testing.T) {
	kcatPath(t)
	n := startNode(t, "")
	// Producing to a new topic auto-creates it (num.partitions=3).
	_, err := kcat(t, 20*time.Second, []byte("a:1\n"), "-b", n.addr, "-t", "auto", "-P", "-K:")
	require.NoError(t, err)
	out, err := kcat(t, 20*time.Second, nil, "-b", n.addr, "-L")
	require.NoError(t, err)
	require.Contains(t, out, "broker 1 at "+n.addr)
	require.Contains(t, out, `topic "auto" with 3 partitions`)
}

// TestKcatProducesAndConsumes100kInOrder is the acceptance run: 100k keyed
// messages with acks 0, 1 and all, idempotence on, zstd, read back in order per
// partition.
func TestKcatProducesAndConsumes100kInOrder(t *testing.T) {
	kcatPath(t)
	if testing.Short() {
		t.Skip("100k messages through real processes")
	}
	n := startNode(t, "")
	const total = 100_000
	var in bytes.Buffer
	for i := 0; i < total; i++ {
		fmt.Fprintf(&in, "k%d:%d\n", i%16, i)
	}
	file := filepath.Join(t.TempDir(), "in.txt")
	require.NoError(t, os.WriteFile(file, in.Bytes(), 0o600))
	runs := []struct {
		topic string
		extra []string
	}{
		{"acks0", []string{"-X", "acks=0"}},
		{"acks1", []string{"-X", "acks=1"}},
		{"acksall", []string{"-X", "acks=all", "-X", "enable.idempotence=true", "-z", "zstd"}},
	}
	for _, r := range runs {
		t.Run(r.topic, func(t *testing.T) {
			args := append([]string{"-b", n.addr, "-t", r.topic, "-P", "-K:", "-l", file}, r.extra...)
			_, err := kcat(t, 120*time.Second, nil, args...)
			require.NoError(t, err)
			exact := r.topic != "acks0"
			if exact {
				// acks=1 is answered before the fsync that makes a batch visible
				// (docs/decisions.md), so a reader started right after the producer
				// exits may reach the end before the last sync: under a load of 17 one
				// stopped at 76,250. Wait until all of them are readable first.
				_, err = kcat(t, 120*time.Second, nil, "-b", n.addr, "-t", r.topic, "-C",
					"-o", "beginning", "-c", strconv.Itoa(total), "-f", "%o\n")
				require.NoError(t, err)
			}
			out, err := kcat(t, 120*time.Second, nil, "-b", n.addr, "-t", r.topic, "-C",
				"-o", "beginning", "-e", "-f", "%p %o %k %s\n")
			require.NoError(t, err)
			checkKcatOutput(t, out, total, exact)
		})
	}
}

// checkKcatOutput checks per-partition offsets ascend without gaps, each key stays in
// one partition in production order, and (when exact) every message arrived once.
func checkKcatOutput(t *testing.T, out string, total int, exact bool) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	nextOff := map[string]int64{}
	keyPart := map[string]string{}
	lastVal := map[string]int{}
	seen := make([]bool, total)
	for _, line := range lines {
		f := strings.Fields(line)
		require.Len(t, f, 4, "line %q", line)
		part, key := f[0], f[2]
		off, err := strconv.ParseInt(f[1], 10, 64)
		require.NoError(t, err)
		val, err := strconv.Atoi(f[3])
		require.NoError(t, err)
		require.Equal(t, nextOff[part], off, "partition %s: offsets must be dense", part)
		nextOff[part] = off + 1
		if p, ok := keyPart[key]; ok {
			require.Equal(t, p, part, "key %s moved partition", key)
		}
		keyPart[key] = part
		if last, ok := lastVal[key]; ok {
			require.Greater(t, val, last, "key %s out of order", key)
		}
		lastVal[key] = val
		require.False(t, seen[val], "message %d read twice", val)
		seen[val] = true
	}
	if exact {
		require.Len(t, lines, total)
	} else {
		require.NotEmpty(t, lines)
	}
}

// TestKcatConsumerGroupResumesFromCommittedOffsets consumes as a kcat consumer group
// three times: everything, then nothing (the offsets were committed), then only what
// was produced in between — also across a kill -9 of the node.
func TestKcatConsumerGroupResumesFromCommittedOffsets(t *testing.T) {
	kcatPath(t)
	props := filepath.Join(t.TempDir(), "node.properties")
	require.NoError(t, os.WriteFile(props, []byte("group.initial.rebalance.delay.ms=0\n"), 0o600))
	n := startNode(t, "", "--config", props)
	produce := func(from, to int) {
		var in bytes.Buffer
		for i := from; i < to; i++ {
			fmt.Fprintf(&in, "%d\n", i)
		}
		_, err := kcat(t, 30*time.Second, in.Bytes(), "-b", n.addr, "-t", "grp", "-P",
			"-X", "acks=all")
		require.NoError(t, err)
	}
	consume := func() []string {
		// Not -o beginning: in -G mode kcat assigns that offset explicitly, overriding
		// the committed one. auto.offset.reset applies only when nothing is committed.
		out, err := kcat(t, 60*time.Second, nil, "-b", n.addr, "-G", "g1",
			"-X", "auto.offset.reset=earliest", "-e", "-f", "%s\n", "grp")
		require.NoError(t, err)
		return strings.Fields(out)
	}
	produce(0, 500)
	require.Len(t, consume(), 500)
	require.Empty(t, consume(), "a second run starts from the committed offsets")
	produce(500, 520)
	n.kill()
	n = startNode(t, n.data, "--config", props)
	got := consume()
	require.Len(t, got, 20, "only what came after the commit, after a kill -9 too")
	require.Contains(t, got, "500")
	require.Contains(t, got, "519")
}
