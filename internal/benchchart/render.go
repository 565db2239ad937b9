package benchchart

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// System is one bar of a panel: which system, and which of its figures.
type System struct {
	Name   string // shown: "NATS JetStream"
	ID     string // the FIGURE system=, e.g. "nats-jetstream"
	Config string // the bracketed label, "" for Sluice
	Test   string
	Color  string
}

// Panel is one group of bars: throughput (msgs/s) or one-at-a-time latency (p50, p99).
type Panel struct {
	Title   string
	Latency bool
	Systems []System
}

const (
	colSluice = "#2b6cb0"
	colNATS   = "#2f855a"
	colRedis  = "#c05621"
)

func sluice(test string) System {
	return System{Name: "Sluice", ID: "sluice", Test: test, Color: colSluice}
}
func nats(config, test string) System {
	return System{Name: "NATS JetStream", ID: "nats-jetstream", Config: config, Test: test,
		Color: colNATS}
}
func redis(config, test string) System {
	return System{Name: "Redis Streams", ID: "redis-streams", Config: config, Test: test,
		Color: colRedis}
}

// Panels are the comparisons of docs/benchmarks.md that the picture shows: the same
// durability on each side of a panel.
var Panels = []Panel{
	{Title: "Durable writes, acknowledged after fsync: msgs/s (1 producer, async)",
		Systems: []System{sluice("produce_acksall_p1"),
			nats("fsync_always", "pub_async_batch500"), redis("aof_always", "xadd_window64_go")}},
	{Title: "Writes acknowledged before fsync: msgs/s (1 producer, async)",
		Systems: []System{sluice("produce_acks1_p1"),
			nats("default", "pub_async_batch500"), redis("aof_everysec", "xadd_window64_go")}},
	{Title: "Reads from the start: msgs/s (1 consumer)",
		Systems: []System{sluice("consume"), nats("default", "consume_ordered_ephemeral"),
			redis("aof_everysec", "consume_xrange_batch1000")}},
	{Title: "Durable write, one at a time: ack latency p50 / p99", Latency: true,
		Systems: []System{sluice("produce_sync_acksall"),
			nats("fsync_always", "pub_sync_one_at_a_time"),
			redis("aof_always", "xadd_sync_window1_go")}},
	{Title: "Write acknowledged before fsync, one at a time: ack latency p50 / p99",
		Latency: true,
		Systems: []System{sluice("produce_sync_acks1"), nats("default", "pub_sync_one_at_a_time"),
			redis("aof_everysec", "xadd_sync_window1_go")}},
}

// ClusterPanel shows the replicated figures of `sluice bench cluster` beside the single
// node's: Sluice alone, since the peers' benchmarks run one node.
var ClusterPanel = Panel{
	Title: "Sluice replicated: 3 nodes, replication factor 3, acks=all, beside 1 node: msgs/s",
	Systems: []System{
		{Name: "3 nodes, acks=all, 1 prod.", ID: "sluice",
			Test: "produce_cluster3_acksall_p1", Color: colSluice},
		{Name: "3 nodes, acks=all, 4 prod.", ID: "sluice",
			Test: "produce_cluster3_acksall_p4", Color: colSluice},
		{Name: "1 node, acks=1, 1 prod.", ID: "sluice", Test: "produce_acks1_p1",
			Color: colSluice}}}

// Options are what the picture says besides the figures.
type Options struct {
	Note string // a line under the caption, e.g. where the numbers come from
}

const (
	width     = 960
	labelX    = 20  // system names
	barX      = 240 // bars start
	barMax    = 560 // the longest bar of a panel
	rowThru   = 26
	rowLat    = 40
	titleH    = 30
	panelGap  = 14
	barHeight = 18
	latBar    = 15
)

// Render draws run as an SVG document on w. Figures the run lacks are drawn as text.
func Render(w io.Writer, run Run, o Options) error {
	var body bytes.Buffer
	y := 72
	for _, p := range append(slices.Clone(Panels), ClusterPanel) {
		y = renderPanel(&body, run, p, y)
	}
	y += 8
	caption := captionLines(run, o)
	height := y + 18*len(caption) + 12
	var b bytes.Buffer
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d"`+
		` font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="13">`+"\n",
		width, height, width, height)
	b.WriteString("<title>Sluice beside NATS JetStream and Redis Streams</title>\n")
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n",
		width, height)
	text(&b, labelX, 28, `font-size="18" font-weight="bold"`,
		"Sluice beside NATS JetStream and Redis Streams, 1 KiB messages, one run")
	text(&b, labelX, 50, `fill="#444"`, "Longer is better for msgs/s, shorter for latency. "+
		"Each panel compares the same durability.")
	b.Write(body.Bytes())
	for i, c := range caption {
		text(&b, labelX, y+18*i+12, `fill="#444" font-size="12"`, c)
	}
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

func captionLines(run Run, o Options) []string {
	date := or(run.Date, "date unknown")
	load := "load average " + or(run.LoadStart, "unknown")
	if run.LoadEnd != "" {
		load += " → " + run.LoadEnd
	}
	cpus := ""
	if run.CPUs != "" {
		cpus = run.CPUs + " cores, "
	}
	lines := []string{
		fmt.Sprintf("Run of %s, %s%s (1, 5, 15 min).", date, cpus, load),
		"Figures from scripts/bench.sh (sluice bench, then ../shared/bench/peer_bench.sh); " +
			"latency is per request, one request at a time.",
	}
	if f := failoverLine(run); f != "" {
		lines = append(lines, f)
	}
	if o.Note != "" {
		lines = append(lines, o.Note)
	}
	return lines
}

// failoverLine sums up the run's failover figures (sluice bench cluster), "" if none.
func failoverLine(run Run) string {
	var parts []string
	for _, k := range []struct{ test, what string }{
		{"failover_kill9", "kill -9 of a partition leader"},
		{"failover_shutdown", "controlled shutdown"},
		{"failover_kill9_controller", "kill -9 of the controller"}} {
		if f, ok := run.Find("sluice", "", k.test); ok && f.Err == "" {
			parts = append(parts, fmt.Sprintf("%s p50 %d ms, max %d ms (%d rounds)", k.what,
				f.P50.Milliseconds(), f.Max.Milliseconds(), f.Rounds))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "Failover to the next acknowledged write: " + strings.Join(parts, "; ") + "."
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// renderPanel draws p's title and one bar (throughput) or two (p50, p99) per system,
// starting at y; it returns the y below the panel.
func renderPanel(b *bytes.Buffer, run Run, p Panel, y int) int {
	text(b, labelX, y+18, `font-weight="bold"`, p.Title)
	fmt.Fprintf(b, `<g class="panel" data-title="%s">`+"\n", attr(p.Title))
	y += titleH
	scale := panelMax(run, p)
	for _, s := range p.Systems {
		f, ok := run.Find(s.ID, s.Config, s.Test)
		name := s.Name
		if s.Config != "" {
			name += " (" + strings.ReplaceAll(s.Config, "_", " ") + ")"
		}
		rowH := rowThru
		if p.Latency {
			rowH = rowLat
		}
		text(b, labelX, y+rowH/2+4, "", name)
		switch {
		case !ok:
			missing(b, y+rowH/2+4, s.Name+": did not run in this run (no figure for "+
				s.Test+")")
		case f.Err != "":
			missing(b, y+rowH/2+4, s.Name+": the step failed: "+f.Err)
		case !p.Latency:
			bar(b, s, "msgs_per_s", y+(rowH-barHeight)/2, barHeight, f.MsgsPerS, scale,
				"", groupDigits(f.MsgsPerS)+" msgs/s", 1)
		case f.P50 == 0 && f.P99 == 0:
			missing(b, y+rowH/2+4, s.Name+": no latency reported")
		default:
			top := y + (rowH-2*latBar-2)/2
			bar(b, s, "p50", top, latBar, f.P50.Seconds(), scale, "p50 ", fmtDur(f.P50), 1)
			bar(b, s, "p99", top+latBar+2, latBar, f.P99.Seconds(), scale, "p99 ",
				fmtDur(f.P99), 0.5)
		}
		y += rowH
	}
	b.WriteString("</g>\n")
	return y + panelGap
}

// panelMax is the largest value a panel draws, the length of its longest bar.
func panelMax(run Run, p Panel) float64 {
	m := 0.0
	for _, s := range p.Systems {
		f, ok := run.Find(s.ID, s.Config, s.Test)
		if !ok || f.Err != "" {
			continue
		}
		if p.Latency {
			m = math.Max(m, math.Max(f.P50.Seconds(), f.P99.Seconds()))
		} else {
			m = math.Max(m, f.MsgsPerS)
		}
	}
	return m
}

func bar(b *bytes.Buffer, s System, metric string, y, h int, v, scale float64,
	prefix, label string, opacity float64) {
	w := 0.0
	if scale > 0 {
		w = math.Max(1, v/scale*barMax)
	}
	fmt.Fprintf(b, `<rect class="bar" data-system="%s" data-metric="%s" x="%d" y="%d" `+
		`width="%.1f" height="%d" fill="%s" fill-opacity="%g"/>`+"\n",
		attr(s.ID), metric, barX, y, w, h, s.Color, opacity)
	text(b, barX+int(w)+6, y+h-4, `class="value"`, prefix+label)
}

func missing(b *bytes.Buffer, y int, msg string) {
	text(b, barX, y, `class="missing" fill="#9b2c2c" font-style="italic"`, msg)
}

func text(b *bytes.Buffer, x, y int, attrs, s string) {
	if attrs != "" {
		attrs = " " + attrs
	}
	fmt.Fprintf(b, `<text x="%d" y="%d"%s>`, x, y, attrs)
	_ = xml.EscapeText(b, []byte(s))
	b.WriteString("</text>\n")
}

func attr(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// groupDigits prints a rate rounded to a whole number with thousands separators.
func groupDigits(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// fmtDur prints a latency with about three significant digits in µs, ms or s.
func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}
