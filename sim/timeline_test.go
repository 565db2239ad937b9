package sim

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"
)

// readTimeline parses a written timeline.html as HTML and returns the run's data
// embedded in it, checking that the page is self-contained (no script, style, image or
// frame from elsewhere; links only to files beside it).
func readTimeline(t *testing.T, path string) tlPage {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Less(t, len(raw), 3<<20, "the page is bounded in size")
	doc, err := html.Parse(strings.NewReader(string(raw)))
	require.NoError(t, err)
	var data string
	var svg, title bool
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			for _, a := range n.Attr {
				if a.Key == "src" {
					t.Errorf("<%s src=%q>: the page must not load anything", n.Data, a.Val)
				}
				if a.Key == "href" && strings.Contains(a.Val, "//") {
					t.Errorf("<%s href=%q>: the page must not link off the folder", n.Data,
						a.Val)
				}
				if a.Key == "id" && a.Val == "data" && n.FirstChild != nil {
					data = n.FirstChild.Data
				}
				if a.Key == "id" && a.Val == "svg" && n.Data == "svg" {
					svg = true
				}
			}
			if n.Data == "title" && n.FirstChild != nil {
				title = strings.Contains(n.FirstChild.Data, "Sluice simulator timeline")
			}
			require.NotEqual(t, "link", n.Data, "no external stylesheet")
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	require.True(t, svg, "the page has the chart's svg element")
	require.True(t, title, "the page has its title")
	require.NotEmpty(t, data, "the page embeds the run's data")
	var p tlPage
	require.NoError(t, json.Unmarshal([]byte(data), &p), "the embedded data is JSON")
	require.LessOrEqual(t, len(p.Items), timelineMaxItems)
	require.LessOrEqual(t, len(p.Items), p.Total)
	return p
}

// lanesOf returns the page's lane names by kind.
func lanesOf(p tlPage) map[string][]string {
	out := map[string][]string{}
	for _, l := range p.Lanes {
		out[l.Kind] = append(out[l.Kind], l.Name)
	}
	return out
}

// requireLanes checks one lane per node and per client of the run, in order.
func requireLanes(t *testing.T, p tlPage, w *World) {
	t.Helper()
	var nodes, clients []string
	for _, n := range w.nodes {
		nodes = append(nodes, fmt.Sprintf("node%d", n.id))
	}
	for _, c := range w.clients {
		clients = append(clients, c.base().name)
	}
	if w.final != nil {
		clients = append(clients, w.final.name)
	}
	var peers []string
	for _, l := range w.sortedLinks() {
		peers = append(peers, l.name)
	}
	lanes := lanesOf(p)
	require.Equal(t, nodes, lanes["node"])
	require.Equal(t, peers, lanes["peer"])
	require.Equal(t, clients, lanes["client"])
}

// TestTimelineDrawsPeerLinks: in a clustered world each node's connection to another
// node is a lane of its own, under the nodes, showing the inter-broker requests it
// carried (follower fetches at least) by API name.
func TestTimelineDrawsPeerLinks(t *testing.T) {
	run := RunOne(1, [][2]string{{"nodes", "3"}}, 0, Options{Timeline: true})
	require.NoError(t, run.Err)
	require.True(t, run.Result.Pass, "%s", strings.Join(run.Result.Summary(), "\n"))
	path, err := run.WriteTimeline(t.TempDir(), nil)
	require.NoError(t, err)
	p := readTimeline(t, path)
	requireLanes(t, p, run.world)
	peers := lanesOf(p)["peer"]
	require.GreaterOrEqual(t, len(peers), 2, "followers fetch from their leaders")
	first := len(lanesOf(p)["node"])
	require.Equal(t, "peer", p.Lanes[first].Kind, "peer lanes follow the node lanes")
	fetches := map[string]int{}
	for _, it := range p.Items {
		if l := p.Lanes[it.Lane]; l.Kind == "peer" {
			require.Equal(t, -1, it.Op, "a peer request is no history operation")
			if strings.HasPrefix(it.Label, "Fetch") {
				fetches[l.Name]++
			}
		}
	}
	require.NotEmpty(t, fetches, "follower fetches are drawn on the peer lanes")
	for name := range fetches {
		require.Regexp(t, `^node\d->node\d$`, name)
	}
}

func spanKinds(t *testing.T, p tlPage) map[string]int {
	t.Helper()
	kinds := map[string]int{}
	for _, s := range p.Spans {
		require.LessOrEqual(t, s.From, s.To, "span %+v", s)
		kinds[s.Kind]++
	}
	return kinds
}

// TestTimelineKeepsTheTrace: recording the timeline changes nothing in the run.
func TestTimelineKeepsTheTrace(t *testing.T) {
	faulty := [][2]string{{"faults.crash", "on"}, {"faults.pause", "on"},
		{"faults.partition", "on"}, {"faults.reset", "on"}, {"faults.diskerrors", "on"},
		{"faults.slowdisk", "on"}, {"faults.restart", "on"}, {"faults.readerrors", "on"}}
	for _, c := range []struct {
		seed uint64
		sets [][2]string
	}{{1, nil}, {7, nil}, {3, faulty}, {4, faulty}} {
		plain := RunOne(c.seed, c.sets, 0, Options{})
		drawn := RunOne(c.seed, c.sets, 0, Options{Timeline: true})
		require.NoError(t, plain.Err)
		require.Equal(t, plain.Result.Line(), drawn.Result.Line(), "seed %d", c.seed)
		require.NotNil(t, drawn.world.tl)
		require.Nil(t, plain.world, "no world is kept without Options.Timeline")
	}
}

// TestTimelineOfAPassingSeed: --html's page for a passing seed under every kind of
// fault has a lane per node and client, the fault spans, bars for operations, and no
// finding.
func TestTimelineOfAPassingSeed(t *testing.T) {
	sets := [][2]string{{"faults.crash", "on"}, {"faults.pause", "on"},
		{"faults.partition", "on"}, {"faults.slowdisk", "on"}, {"faults.reset", "on"},
		{"faults.clog", "on"}, {"faults.restart", "on"}}
	run := RunOne(3, sets, 0, Options{Timeline: true})
	require.NoError(t, run.Err)
	require.True(t, run.Result.Pass, "%s", strings.Join(run.Result.Summary(), "\n"))
	dir := t.TempDir()
	path, err := run.WriteTimeline(dir, nil)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, TimelineFile), path)
	p := readTimeline(t, path)
	requireLanes(t, p, run.world)
	require.True(t, p.Pass)
	require.Empty(t, p.Findings)
	require.Empty(t, p.Offending)
	kinds := spanKinds(t, p)
	faults := run.Result.Stats.Faults
	// Every injected crash, pause, slow disk and partition is a span (or was merged
	// into an overlapping one of its kind, hence at most).
	for kind, injected := range map[string]int{"crash": faults["crash"] -
		faults["crash-in-step"], "pause": faults["pause"], "slowdisk": faults["slowdisk"],
		"partition": faults["partition"], "clog": faults["clog"]} {
		require.Positive(t, injected, "the seed injected no %s", kind)
		require.Positive(t, kinds[kind], "no %s span drawn", kind)
	}
	marks := map[string]int{}
	for _, m := range p.Marks {
		marks[m.Kind]++
	}
	require.Equal(t, 1, marks["heal"])
	require.Equal(t, 1, marks["final"])
	require.Positive(t, marks["reset"])
	outcomes := map[string]int{}
	for _, it := range p.Items {
		outcomes[it.Outcome]++
		require.True(t, it.To < 0 || it.To >= it.From, "item %+v", it)
		require.Less(t, it.Row, max(p.Lanes[it.Lane].Rows, 1))
	}
	require.Positive(t, outcomes["ok"])
}

// TestTimelineShowsAFinding plants a bug by configuration (acknowledging without fsync
// under power loss, as TestAcknowledgingWithoutFsyncIsCaught) and checks the failing
// seed's artifacts: timeline.html with the finding, the operations it names marked,
// the crashes drawn, and a link to porcupine's view written beside it.
func TestTimelineShowsAFinding(t *testing.T) {
	sets := [][2]string{{"log.flush.policy", "never"}, {"faults.crash", "on"}}
	var run SeedRun
	for seed := uint64(1); seed <= 10; seed++ {
		if run = RunOne(seed, sets, 0, Options{}); run.Result.Has("lost-write") {
			break
		}
	}
	require.True(t, run.Result.Has("lost-write"), "no seed of 1..10 lost a write")
	requireFindingPage(t, run, "lost-write")
}

// requireFindingPage writes a failed run's artifacts and checks its timeline.html.
func requireFindingPage(t *testing.T, run SeedRun, kind string) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, WriteArtifacts(run.Config, run.Result, dir))
	p := readTimeline(t, filepath.Join(dir, TimelineFile))
	w, err := New(run.Config, Options{})
	require.NoError(t, err)
	w.Run()
	requireLanes(t, p, w)
	require.False(t, p.Pass)
	require.NotEmpty(t, p.Findings)
	require.Contains(t, strings.Join(p.Findings, "\n"), kind)
	require.Equal(t, len(run.Result.Failures), len(p.Findings))
	require.Positive(t, spanKinds(t, p)["crash"], "the crashes are drawn")
	// The operations the finding names are drawn and marked, whatever the bound.
	require.NotEmpty(t, p.Offending)
	marked := map[int]bool{}
	for _, it := range p.Items {
		if it.Mark == 2 {
			marked[it.Op] = true
		}
	}
	for _, id := range p.Offending {
		require.True(t, marked[id], "op %d named by the finding is not marked", id)
		require.Contains(t, strings.Join(p.Findings, "\n")+"\n"+whyOf(run), opName(id))
	}
	failures := 0
	for _, m := range p.Marks {
		if m.Kind == "failure" {
			failures++
		}
	}
	require.Positive(t, failures, "the failure is on the time axis")
	// The page links porcupine's view of the offending partition, written beside it.
	require.NotEmpty(t, p.Links)
	for _, l := range p.Links {
		require.True(t, strings.HasPrefix(l, "porcupine-"), l)
		st, err := os.Stat(filepath.Join(dir, l))
		require.NoError(t, err, "linked %s is missing", l)
		require.Positive(t, st.Size())
	}
}

func opName(id int) string { return fmt.Sprintf("op %d", id) }

func whyOf(run SeedRun) string {
	var out []string
	if run.Result.Report != nil {
		for _, p := range run.Result.Report.Partitions {
			out = append(out, p.Why)
		}
	}
	return strings.Join(out, "\n")
}
