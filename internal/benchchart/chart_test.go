package benchchart

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const fixture = "testdata/run-2026-11-30.txt"

func readFixture(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(fixture)
	require.NoError(t, err)
	return string(b)
}

// without drops the lines of the fixture that mention any of the words.
func without(s string, words ...string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		drop := false
		for _, w := range words {
			drop = drop || strings.Contains(l, w)
		}
		if !drop {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func render(t *testing.T, results string) string {
	t.Helper()
	run, err := Parse(strings.NewReader(results))
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, Render(&out, run, Options{Note: "a note & <more>"}))
	return out.String()
}

// svgBar is a <rect class="bar">, as a reader of the SVG sees it.
type svgBar struct {
	System, Metric string
	Width          float64
}

// parseSVG decodes the whole document with encoding/xml (failing on any syntax error)
// and returns its bars per panel title and all its text.
func parseSVG(t *testing.T, svg string) (map[string][]svgBar, string) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(svg))
	panels := map[string][]svgBar{}
	var texts strings.Builder
	panel, root := "", ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		switch el := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = el.Name.Local
			}
			a := map[string]string{}
			for _, at := range el.Attr {
				a[at.Name.Local] = at.Value
			}
			if el.Name.Local == "g" && a["class"] == "panel" {
				panel = a["data-title"]
			}
			if el.Name.Local == "rect" && a["class"] == "bar" {
				var w float64
				_, err := fmtSscan(a["width"], &w)
				require.NoError(t, err)
				panels[panel] = append(panels[panel], svgBar{a["data-system"], a["data-metric"], w})
			}
		case xml.CharData:
			texts.Write(el)
			texts.WriteByte('\n')
		}
	}
	require.Equal(t, "svg", root)
	return panels, texts.String()
}

func systemsOf(bars []svgBar, metric string) []string {
	var out []string
	for _, b := range bars {
		if b.Metric == metric {
			out = append(out, b.System)
		}
	}
	return out
}

func TestParseReadsEveryToolsFormat(t *testing.T) {
	run, err := Parse(strings.NewReader(readFixture(t)))
	require.NoError(t, err)
	require.Len(t, run.Figures, 21)
	require.Equal(t, "2026-11-30T08:44:09Z", run.Date)
	require.Equal(t, "1.60 3.20 4.61", run.LoadStart)
	require.Equal(t, "3.78 3.54 4.63", run.LoadEnd)

	f, ok := run.Find("sluice", "", "produce_sync_acksall")
	require.True(t, ok)
	require.Equal(t, 2024.0, f.MsgsPerS)
	require.Equal(t, 440*time.Microsecond, f.P50)
	require.Equal(t, 893*time.Microsecond, f.P99)

	f, ok = run.Find("nats-jetstream", "default", "pub_async_batch500") // 8,559.26us
	require.True(t, ok)
	require.Equal(t, 8559260*time.Nanosecond, f.P50)
	require.Equal(t, 13378390*time.Nanosecond, f.P99)

	f, ok = run.Find("redis-streams", "aof_always", "xadd_sync_window1_go")
	require.True(t, ok)
	require.Equal(t, 490199*time.Nanosecond, f.P50)
	require.Equal(t, 8501688*time.Nanosecond, f.P99)

	f, ok = run.Find("redis-streams", "aof_everysec", "xadd_pipeline64_redis-benchmark")
	require.True(t, ok)
	require.Equal(t, 167*time.Microsecond, f.P50) // "0.167 msec"
	require.Zero(t, f.P99)

	_, ok = run.Find("sluice", "", "no_such_step")
	require.False(t, ok)
}

// The clean's figure of `sluice bench compaction` has no msgs_per_s; it is kept, with
// no rate, rather than failing the whole picture.
func TestParseKeepsTheCompactionCleanFigure(t *testing.T) {
	run, err := Parse(strings.NewReader("FIGURE system=sluice test=compaction_clean " +
		"cleaned_MB_per_s=80.1 read_MB_per_s=160.2 clean_s=3.10\n"))
	require.NoError(t, err)
	f, ok := run.Find("sluice", "", "compaction_clean")
	require.True(t, ok)
	require.Zero(t, f.MsgsPerS)
}

func TestParseRejectsAFigureWithoutSystem(t *testing.T) {
	_, err := Parse(strings.NewReader("noise\nFIGURE test=x msgs_per_s=1\n"))
	require.ErrorContains(t, err, "line 2")
	_, err = Parse(strings.NewReader("FIGURE system=sluice test=x msgs_per_s=fast\n"))
	require.ErrorContains(t, err, "msgs_per_s")
	_, err = Parse(strings.NewReader("FIGURE system=sluice test=x records=3\n"))
	require.ErrorContains(t, err, "msgs_per_s")
}

// sluice bench hostile's counts have no rate; its rates are read as any other.
func TestParseTakesHostileCounts(t *testing.T) {
	run, err := Parse(strings.NewReader("FIGURE system=sluice test=hostile_connections " +
		"conns=2000 idle_refused=0\nFIGURE system=sluice test=produce_hostile msgs_per_s=900 " +
		"ack_latency(P50:1.2ms P99:8ms max:40ms) acked=9000 failed=0\n"))
	require.NoError(t, err)
	f, ok := run.Find("sluice", "", "hostile_connections")
	require.True(t, ok)
	require.Zero(t, f.MsgsPerS)
	f, ok = run.Find("sluice", "", "produce_hostile")
	require.True(t, ok)
	require.Equal(t, 900.0, f.MsgsPerS)
	require.Equal(t, 8*time.Millisecond, f.P99)
}

func TestRenderOneBarPerSystemWithItsValue(t *testing.T) {
	svg := render(t, readFixture(t))
	panels, texts := parseSVG(t, svg)
	require.Len(t, panels, len(Panels)+1, "the comparisons, then the cluster panel")
	all := []string{"sluice", "nats-jetstream", "redis-streams"}
	for _, p := range Panels {
		if p.Latency {
			require.Equal(t, all, systemsOf(panels[p.Title], "p50"), p.Title)
			require.Equal(t, all, systemsOf(panels[p.Title], "p99"), p.Title)
		} else {
			require.Equal(t, all, systemsOf(panels[p.Title], "msgs_per_s"), p.Title)
		}
	}
	// The values are labelled, in the units the docs use.
	for _, want := range []string{"191,931 msgs/s", "3,284 msgs/s", "5,479 msgs/s",
		"220,582 msgs/s", "211,204 msgs/s", "p50 440 µs", "p99 893 µs", "p99 4.45 ms",
		"p99 8.50 ms", "p50 52 µs", "load average 1.60 3.20 4.61 → 3.78 3.54 4.63",
		"2026-11-30T08:44:09Z", "a note & <more>"} {
		require.Contains(t, texts, want)
	}
	// Only the cluster panel's two bars: the fixture is a run without `bench cluster`.
	require.Equal(t, 2, strings.Count(texts, "did not run"))
	// The longest bar of a panel is the largest value: Sluice's durable throughput.
	durable := panels[Panels[0].Title]
	require.Greater(t, durable[0].Width, 50*durable[1].Width)
	// Self-contained: no script, no external reference.
	for _, bad := range []string{"<script", "href", "http://www.w3.org/1999", "url("} {
		require.NotContains(t, svg, bad)
	}
}

func TestRenderSaysWhenAPeerDidNotRun(t *testing.T) {
	svg := render(t, without(readFixture(t), "redis-streams"))
	panels, texts := parseSVG(t, svg)
	for _, p := range Panels {
		metric := "msgs_per_s"
		if p.Latency {
			metric = "p50"
		}
		require.Equal(t, []string{"sluice", "nats-jetstream"}, systemsOf(panels[p.Title], metric))
	}
	require.Equal(t, len(Panels), strings.Count(texts, "Redis Streams: did not run"))
}

func TestRenderSaysWhenAStepFailed(t *testing.T) {
	results := without(readFixture(t), "nats-jetstream[default] test=consume_ordered") +
		"\nFIGURE system=nats-jetstream[default] test=consume_ordered_ephemeral ERROR timeout\n"
	_, texts := parseSVG(t, render(t, results))
	require.Contains(t, texts, "NATS JetStream: the step failed: timeout")
}

func TestRenderWithSluiceAloneAndNoContext(t *testing.T) {
	svg := render(t, "FIGURE system=sluice test=consume msgs_per_s=10 MiB_per_s=0.1\n")
	panels, texts := parseSVG(t, svg)
	require.Equal(t, []string{"sluice"}, systemsOf(panels[Panels[2].Title], "msgs_per_s"))
	require.Contains(t, texts, "date unknown")
	require.Contains(t, texts, "Sluice: did not run")
}

// The cluster figures of `sluice bench cluster`: a panel of their own, and the failover
// times in the caption; without them the panel says they did not run.
func TestRenderShowsTheClusterFigures(t *testing.T) {
	_, texts := parseSVG(t, render(t, readFixture(t)))
	require.Contains(t, texts, "3 nodes, acks=all, 1 prod.: did not run")
	require.NotContains(t, texts, "Failover")
	results := readFixture(t) + "\n" +
		"FIGURE system=sluice test=produce_cluster3_acksall_p1 msgs_per_s=40000 MiB_per_s=39\n" +
		"FIGURE system=sluice test=produce_cluster3_acksall_p4 msgs_per_s=60000 MiB_per_s=58\n" +
		"FIGURE system=sluice test=failover_kill9 nodes=3 rounds=10 p50_ms=1234 max_ms=1900 " +
		"min_ms=900\n" +
		"FIGURE system=sluice test=failover_shutdown nodes=3 rounds=10 p50_ms=80 max_ms=150 " +
		"min_ms=40\n"
	run, err := Parse(strings.NewReader(results))
	require.NoError(t, err)
	f, ok := run.Find("sluice", "", "failover_kill9")
	require.True(t, ok)
	require.Equal(t, 1234*time.Millisecond, f.P50)
	require.Equal(t, 1900*time.Millisecond, f.Max)
	require.Equal(t, 10, f.Rounds)
	panels, texts := parseSVG(t, render(t, results))
	bars := panels[ClusterPanel.Title]
	require.Equal(t, []string{"sluice", "sluice", "sluice"}, systemsOf(bars, "msgs_per_s"))
	require.Greater(t, bars[1].Width, bars[0].Width, "60,000 drawn longer than 40,000")
	require.Contains(t, texts, "60,000 msgs/s")
	require.Contains(t, texts, "kill -9 of a partition leader p50 1234 ms, max 1900 ms "+
		"(10 rounds); controlled shutdown p50 80 ms, max 150 ms (10 rounds)")
	_, err = Parse(strings.NewReader("FIGURE system=sluice test=failover_kill9 rounds=1 " +
		"p50_ms=soon max_ms=1\n"))
	require.ErrorContains(t, err, "p50_ms")
}

func TestRenderIsDeterministic(t *testing.T) {
	require.Equal(t, render(t, readFixture(t)), render(t, readFixture(t)))
}

func fmtSscan(s string, v *float64) (int, error) { return fmt.Sscan(s, v) }
