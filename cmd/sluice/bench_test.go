package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// benchTopics lists the topics a bench left on the node at addr.
func benchTopics(t *testing.T, addr string) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	require.NoError(t, err)
	var out []string
	for _, name := range topics.Names() {
		if strings.HasPrefix(name, "bench-") {
			out = append(out, name)
		}
	}
	return out
}

// Issue 6 item 7: bench left its topics behind.
func TestBenchDeletesItsTopics(t *testing.T) {
	addr := startTestNode(t)
	var out strings.Builder
	o := benchOpts{bootstrap: addr, records: 200, size: 16, partitions: 1,
		maxTime: 20 * time.Second, steps: "acks1_p1,consume,sync_acks1"}
	require.NoError(t, benchRun(context.Background(), o, &out))
	require.Contains(t, out.String(), "test=consume")
	require.Empty(t, benchTopics(t, addr))
}

// And on Ctrl-C: the step in progress ends early and the topics still go.
func TestBenchInterruptedDeletesItsTopics(t *testing.T) {
	addr := startTestNode(t)
	ctx, cancel := context.WithCancel(context.Background())
	o := benchOpts{bootstrap: addr, records: 1 << 30, size: 16, partitions: 1,
		maxTime: time.Minute, steps: "acks1_p1"}
	go func() {
		for len(benchTopics(t, addr)) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	err := benchRun(ctx, o, io.Discard)
	require.ErrorContains(t, err, "interrupted (bench topics deleted)")
	require.Less(t, time.Since(start), 30*time.Second)
	require.Empty(t, benchTopics(t, addr))
}
