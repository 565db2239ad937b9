package main

// The node `sluice bench hostile` starts when no --bootstrap is given, and what the
// bench reads of a node: its connection counters from /metrics and its memory and
// descriptors from /proc.

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// hostileNode is the node the bench started.
type hostileNode struct {
	ch   *devChild
	logs io.Writer
	mu   sync.Mutex
	done func()
}

// startHostileNode starts a node on 127.0.0.1:o.port with hostileNodeDefaults and
// o.settings, and points o.bootstrap, o.metrics and o.serverPID at it.
func startHostileNode(ctx context.Context, o *hostileOpts) (*hostileNode, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sluice-bench-hostile-")
	if err != nil {
		return nil, err
	}
	n := &hostileNode{logs: io.Discard, done: func() { os.RemoveAll(dir) }}
	if err := n.prepare(o, dir); err != nil {
		n.done()
		return nil, err
	}
	if err := n.ch.start(exe, n.logs, &n.mu); err != nil {
		n.done()
		return nil, err
	}
	if err := n.ch.awaitListening(ctx, 60*time.Second); err != nil {
		n.stop()
		return nil, fmt.Errorf("the bench's node: %w", err)
	}
	o.bootstrap, o.serverPID = n.ch.kafka, n.ch.cmd.Process.Pid
	o.metrics = fmt.Sprintf("http://127.0.0.1:%d/metrics", o.port+1)
	return n, nil
}

// prepare writes the node's config file, opens its log and sets its arguments.
func (n *hostileNode) prepare(o *hostileOpts, dir string) error {
	for _, kv := range hostileNodeDefaults {
		if _, set := o.settings.values[kv[0]]; !set {
			_ = o.settings.Set(kv[0] + "=" + kv[1])
		}
	}
	var b []byte
	for _, k := range o.settings.order {
		b = fmt.Appendf(b, "%s=%s\n", k, o.settings.values[k])
	}
	cfg := filepath.Join(dir, "node.properties")
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		return err
	}
	data := o.data
	if data == "" {
		data = filepath.Join(dir, "data")
	}
	if o.logFile != "" {
		f, err := os.Create(o.logFile)
		if err != nil {
			return err
		}
		n.logs, n.done = f, func() { f.Close(); os.RemoveAll(dir) }
	}
	kafka := fmt.Sprintf("127.0.0.1:%d", o.port)
	n.ch = &devChild{id: 1, kafka: kafka, args: []string{"node", "--id", "1",
		"--listen", kafka, "--data", data, "--config", cfg,
		"--http-listen", fmt.Sprintf("127.0.0.1:%d", o.port+1), "--log-format", "console"}}
	return nil
}

// stop stops the node (SIGTERM, then SIGKILL after 30 s) and removes its files.
func (n *hostileNode) stop() {
	stopDevChildren([]*devChild{n.ch}, n.logs, &n.mu)
	n.done()
}

// nodeLimits is what a node's /metrics says of its connections; nil when not known.
type nodeLimits struct {
	open float64            // sluice_connections_open
	hits map[string]float64 // sluice_connection_limit_hits_total by limit
}

// scrapeLimits reads url's connection figures, nil when url is "" or does not answer.
func scrapeLimits(ctx context.Context, url string) *nodeLimits {
	if url == "" {
		return nil
	}
	mfs, err := scrapeMetrics(ctx, url)
	if err != nil {
		return nil
	}
	l := &nodeLimits{hits: map[string]float64{}}
	if mf := mfs["sluice_connections_open"]; mf != nil && len(mf.Metric) == 1 {
		l.open = mf.Metric[0].GetGauge().GetValue()
	}
	if mf := mfs["sluice_connection_limit_hits_total"]; mf != nil {
		for _, m := range mf.Metric {
			for _, lp := range m.Label {
				if lp.GetName() == "limit" {
					l.hits[lp.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	return l
}

// serverMem is a process's resident memory (MiB) and open descriptors, zeros when
// unknown.
func serverMem(pid int) (float64, int) {
	if pid <= 0 {
		return 0, 0
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	var kb float64
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			_, _ = fmt.Sscanf(strings.TrimSpace(rest), "%f", &kb)
		}
	}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return kb / 1024, len(fds)
}

// hostileNodeSeen is what the bench saw of the node: its /metrics before the attack,
// at its end (before the bench closed its connections) and after, its memory at the
// end, and how long one produce took after the attack.
type hostileNodeSeen struct {
	before, during, end *nodeLimits
	rssMiB              float64
	fds                 int
	after               time.Duration
}

// printHostileNode prints the node's side: the connections open at the end of the
// attack, the limit hits from its start until the bench closed its connections, the
// node's memory, and the produce after.
func printHostileNode(out io.Writer, s hostileNodeSeen) {
	line := fmt.Sprintf("FIGURE system=sluice test=hostile_node after_produce_ms=%d",
		s.after.Milliseconds())
	if s.before != nil && s.during != nil && s.end != nil {
		hit := func(limit string) int64 { return int64(s.end.hits[limit] - s.before.hits[limit]) }
		line += fmt.Sprintf(" conns_open=%.0f refused_per_ip=%d refused_max_conns=%d "+
			"read_timeouts=%d idle_closes=%d", s.during.open, hit("max.connections.per.ip"),
			hit("max.connections"), hit("sluice.request.read.timeout.ms"),
			hit("connections.max.idle.ms"))
	}
	if s.fds > 0 {
		line += fmt.Sprintf(" rss_MiB=%.1f fds=%d", s.rssMiB, s.fds)
	}
	fmt.Fprintln(out, line)
}
