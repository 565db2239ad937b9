package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Helpers shared by the client compatibility tests (sarama, kafka-go, kafkajs): each
// writes values "k<key>-<seq>" under key "k<seq mod keys>" so that a read can be
// checked for per-partition density, per-key order and exactly-once delivery.

// groupNode starts a node whose groups rebalance at once (no initial join delay), so
// a single-member group gets its assignment without waiting.
func groupNode(t *testing.T) *node {
	t.Helper()
	props := filepath.Join(t.TempDir(), "node.properties")
	require.NoError(t, os.WriteFile(props, []byte("group.initial.rebalance.delay.ms=0\n"), 0o600))
	n := startNode(t, "", "--config", props)
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("SLUICE_E2E_LOG") != "" {
			t.Logf("node log:\n%s", n.logText())
		}
	})
	return n
}

// keyedMsg is one consumed record, reduced to what the order checks need (shared by
// the tests of every Go client).
type keyedMsg struct {
	partition int32
	offset    int64
	key, val  string
}

// seqOf returns the production sequence number in a value "k<key>-<seq>".
func seqOf(t *testing.T, val string) int {
	t.Helper()
	_, s, ok := strings.Cut(val, "-")
	require.True(t, ok, "value %q", val)
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// checkKeyedOrder checks a read of a whole topic: each partition's offsets ascend
// from 0 without gaps, each key stays in one partition in production order, and values
// 0..total-1 each arrived exactly once.
func checkKeyedOrder(t *testing.T, got []keyedMsg, total int) {
	t.Helper()
	nextOff := map[int32]int64{}
	keyPart := map[string]int32{}
	lastSeq := map[string]int{}
	seen := map[int]bool{}
	for _, m := range got {
		require.Equal(t, nextOff[m.partition], m.offset, "partition %d: offsets must be dense from 0",
			m.partition)
		nextOff[m.partition] = m.offset + 1
		if p, ok := keyPart[m.key]; ok {
			require.Equal(t, p, m.partition, "key %s moved partition", m.key)
		}
		keyPart[m.key] = m.partition
		seq := seqOf(t, m.val)
		if last, ok := lastSeq[m.key]; ok {
			require.Greater(t, seq, last, "key %s out of order", m.key)
		}
		lastSeq[m.key] = seq
		require.False(t, seen[seq], "record %s read twice", m.val)
		seen[seq] = true
	}
	require.Len(t, got, total, fmt.Sprintf("records read across %d partitions", len(nextOff)))
}
