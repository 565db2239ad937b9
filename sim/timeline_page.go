package sim

import (
	_ "embed" // the page's HTML, CSS and JavaScript
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/linearizability"
)

// timeline.html, the picture of one run: one lane per node and per client, fault
// spells as spans, client operations as bars from invocation to answer with their
// outcome, and the checker's finding with the operations it names. The page is one
// self-contained file (inline CSS, JavaScript and SVG; no network), with the run's data
// as JSON inside it. docs/simulation.md, "Reading a failure: timeline.html".

//go:embed timeline.html
var timelineTemplate string

// timelineMaxItems bounds the operations, group answers and requests the page draws
// (about 200 bytes each); the page says when it left some out.
const timelineMaxItems = 4000

// timelineMaxRows bounds the rows of overlapping bars in one client's lane.
const timelineMaxRows = 8

// TimelineFile is the page's name in an artifact folder.
const TimelineFile = "timeline.html"

// WriteTimeline writes the timeline of a run made with Options.Timeline into dir as
// timeline.html, linking the porcupine views named in porcupine (files in dir). It
// returns the page's path.
func (r SeedRun) WriteTimeline(dir string, porcupine []string) (string, error) {
	if r.world == nil || r.world.tl == nil {
		return "", fmt.Errorf("the run did not record a timeline (Options.Timeline)")
	}
	return r.world.writeTimeline(&r.Result, dir, porcupine)
}

func (w *World) writeTimeline(res *Result, dir string, porcupine []string) (string, error) {
	page := w.timelinePage(res, porcupine)
	raw, err := json.Marshal(page) // escapes <, > and &: safe inside a script element
	if err != nil {
		return "", err
	}
	html := strings.Replace(timelineTemplate, "/*DATA*/null", string(raw), 1)
	html = strings.ReplaceAll(html, "<!--TITLE-->", fmt.Sprintf("seed %d", res.Seed))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, TimelineFile)
	return path, os.WriteFile(path, []byte(html), 0o644)
}

// The page's data; short JSON names keep it small.
type tlPage struct {
	Seed     uint64    `json:"seed"`
	Line     string    `json:"line"`
	Pass     bool      `json:"pass"`
	Findings []string  `json:"findings"`
	Links    []string  `json:"links"`
	EndUs    int64     `json:"end"`
	StubUs   int64     `json:"stub"` // drawn length of a bar whose outcome is unknown
	Lanes    []tlLane  `json:"lanes"`
	Spans    []tlPSpan `json:"spans"`
	Marks    []tlPMark `json:"marks"`
	Items    []tlItem  `json:"items"`
	Total    int       `json:"total"` // items before the bound
	FocusUs  int64     `json:"focus"`
	// ShownFrom and ShownTo bound the calls of the operations drawn when the bound left
	// some out.
	ShownFrom int64 `json:"shownFrom"`
	ShownTo   int64 `json:"shownTo"`
	Dropped   int   `json:"dropped"` // recorder entries past its bounds
	Offending []int `json:"offending"`
}

type tlLane struct {
	Name string `json:"name"`
	Kind string `json:"kind"` // node or client
	Note string `json:"note"`
	Rows int    `json:"rows"`
}

type tlPSpan struct {
	Lane int    `json:"l"`
	Row  int    `json:"r"`
	Kind string `json:"k"`
	From int64  `json:"f"`
	To   int64  `json:"t"`
	Text string `json:"x"`
}

type tlPMark struct {
	Lane int    `json:"l"` // -1: every lane
	Kind string `json:"k"`
	At   int64  `json:"a"`
	Text string `json:"x"`
}

type tlItem struct {
	Lane    int    `json:"l"`
	Row     int    `json:"r"`
	From    int64  `json:"f"`
	To      int64  `json:"t"` // -1: outcome unknown
	Outcome string `json:"o"` // ok, err or unk
	Label   string `json:"s"`
	Detail  string `json:"d"`
	Mark    int    `json:"h"` // 2: named by the finding, 1: touches its offset
	Op      int    `json:"i"` // history op id, -1 for none
	class   int
}

// timelinePage gathers the page's data after the run.
func (w *World) timelinePage(res *Result, porcupine []string) tlPage {
	w.tl.closeAll(w.now)
	p := tlPage{Seed: res.Seed, Line: res.Line(), Pass: res.Pass, Links: porcupine,
		EndUs: w.now / 1000, StubUs: max(w.now/1000/150, 1000), Dropped: w.tl.dropped,
		Offending: []int{}}
	for _, f := range res.Failures {
		p.Findings = append(p.Findings, f.String())
	}
	lanes, index := w.timelineLanes()
	named, related := offendingOps(res, &w.hist)
	for id := range named {
		p.Offending = append(p.Offending, id)
	}
	sort.Ints(p.Offending)
	items := w.timelineItems(index, named, related)
	p.Total = len(items)
	p.FocusUs = focusOf(items)
	items = boundItems(items, p.FocusUs)
	p.ShownFrom, p.ShownTo = shownWindow(items, p.Total, p.EndUs)
	rows := packRows(items, p.StubUs)
	for i := range lanes {
		lanes[i].Rows = max(rows[i], 1)
	}
	p.Spans, p.Marks = w.timelineFaults(index, lanes)
	p.Lanes, p.Items = lanes, items
	return p
}

// timelineLanes lists the lanes, nodes first, then the nodes' peer links (clustered
// worlds), then the clients, and maps actors to lane indexes.
func (w *World) timelineLanes() ([]tlLane, map[int32]int) {
	index := map[int32]int{}
	var lanes []tlLane
	for _, n := range w.nodes {
		index[n.id] = len(lanes)
		lanes = append(lanes, tlLane{Name: fmt.Sprintf("node%d", n.id), Kind: "node",
			Note: fmt.Sprintf("broker node %d (id %d)", n.id, n.id+1)})
	}
	for _, l := range w.sortedLinks() {
		index[l.actor] = len(lanes)
		lanes = append(lanes, tlLane{Name: l.name, Kind: "peer", Note: fmt.Sprintf(
			"node%d's inter-broker connection to node%d: follower fetches, AlterPartition, "+
				"forwarded requests", l.from.id, l.n.id)})
	}
	for _, c := range w.clients {
		cb := c.base()
		index[cb.actor] = len(lanes)
		lanes = append(lanes, tlLane{Name: cb.name, Kind: "client", Note: clientNote(c)})
	}
	if f := w.final; f != nil {
		index[f.actor] = len(lanes)
		lanes = append(lanes, tlLane{Name: f.name, Kind: "client",
			Note: "final reader: reads every partition after the heal"})
	}
	return lanes, index
}

func clientNote(c client) string {
	switch c := c.(type) {
	case *producer:
		return fmt.Sprintf("producer to %s, acks=%d, idempotent=%v, timeout %d ms",
			c.spec.Topic, c.spec.Acks, c.spec.Idempotent, c.spec.TimeoutMs)
	case *reader:
		return "reader: fetches and ListOffsets"
	case *committer:
		return "offset committer: OffsetCommit and OffsetFetch"
	case *member:
		return "consumer group member of " + c.spec.Group
	case *admin:
		return "admin client: creates topics, changes configs"
	case *deleter:
		return "deletes and re-creates topics"
	case *auditor:
		return "auditor: every other API and hostile forms"
	case *vandal:
		return "vandal: sends malformed batches"
	case *zombie:
		return "zombie producer: writes with an older epoch"
	}
	return ""
}

// timelineItems turns the history's operations, the group answers and, for clients
// without either, their requests into bars.
func (w *World) timelineItems(index map[int32]int, named, related map[int]bool) []tlItem {
	var items []tlItem
	hasOps := map[int]bool{}
	for i := range w.hist.Ops {
		op := &w.hist.Ops[i]
		lane, ok := index[int32(op.Client)]
		if !ok {
			continue
		}
		hasOps[lane] = true
		it := tlItem{Lane: lane, From: op.Call / 1000, To: op.Return / 1000, Op: op.ID,
			Label: opLabel(op), Detail: describeOp(op), class: 2}
		switch op.Outcome {
		case linearizability.OK:
			it.Outcome = "ok"
		case linearizability.Failed:
			it.Outcome = "err"
		default:
			it.Outcome, it.To = "unk", -1
		}
		if op.ErrCode > 0 {
			it.Detail += " (" + errName(op.ErrCode) + ")"
		}
		if named[op.ID] {
			it.Mark, it.class = 2, 0
		} else if related[op.ID] {
			it.Mark, it.class = 1, 1
		}
		items = append(items, it)
	}
	for _, e := range w.hist.Groups {
		lane, ok := index[int32(e.Client)]
		if !ok || e.Kind == linearizability.GroupCommit { // commits are ops already
			continue
		}
		hasOps[lane] = true
		items = append(items, tlItem{Lane: lane, From: e.Call / 1000, To: e.Return / 1000,
			Outcome: "ok", Label: fmt.Sprintf("%s gen %d", e.Kind, e.Generation), Op: -1,
			Detail: fmt.Sprintf("group %s %s member=%s generation=%d partitions=%v "+
				"coordinator incarnation %d", e.Group, e.Kind, e.Member, e.Generation,
				e.Partitions, e.Incarnation), class: 2})
	}
	for _, r := range w.tl.reqs {
		lane, ok := index[r.Lane]
		if !ok || hasOps[lane] {
			continue
		}
		items = append(items, reqItem(lane, r))
	}
	return items
}

func reqItem(lane int, r tlReq) tlItem {
	name := kmsg.NameForKey(r.API)
	it := tlItem{Lane: lane, From: r.Sent / 1000, To: r.Done / 1000, Outcome: "ok",
		Label: name, Op: -1, class: 2}
	switch {
	case r.Lost != "":
		it.Outcome, it.Label = "unk", name+" ?"
		it.Detail = fmt.Sprintf("%s request: %s, outcome unknown", name, r.Lost)
	case r.Code != 0:
		it.Outcome, it.Label = "err", name+" "+errName(r.Code)
		it.Detail = fmt.Sprintf("%s request answered with %s", name, errName(r.Code))
	default:
		it.Detail = name + " request answered without error"
	}
	return it
}

// opLabel is the short text on an operation's bar.
func opLabel(op *linearizability.Op) string {
	tp := core.TopicPartition(op.TP).String()
	switch op.Kind {
	case linearizability.OpAppend:
		s := fmt.Sprintf("append %s ×%d", tp, len(op.Values))
		switch op.Outcome {
		case linearizability.OK:
			if op.Offset >= 0 {
				return s + " @" + strconv.FormatInt(op.Offset, 10)
			}
			return s + " ok"
		case linearizability.Failed:
			return s + " " + errName(op.ErrCode)
		}
		return s + " ?"
	case linearizability.OpRead:
		if op.FetchOffset < 0 {
			return fmt.Sprintf("list-offsets %s hwm %d", tp, op.HWM)
		}
		s := fmt.Sprintf("read %s @%d", tp, op.FetchOffset)
		if n := len(op.Records); n > 0 {
			s += fmt.Sprintf(" →[%d..%d]", op.Records[0].Offset, op.Records[n-1].Offset)
		}
		if op.Final {
			s = "final " + s
		}
		return s + fmt.Sprintf(" hwm %d", op.HWM)
	case linearizability.OpCommit:
		return fmt.Sprintf("commit %s %s=%d", op.Group, tp, op.Offset)
	default:
		return fmt.Sprintf("offset-fetch %s %s→%d", op.Group, tp, op.Offset)
	}
}

var opRef = regexp.MustCompile(`\bops? (\d+)`)

// offendingOps finds the operations a failure names ("op 17") and, for each anomaly at
// an offset, a few operations that touched that offset.
func offendingOps(res *Result, h *linearizability.History) (named, related map[int]bool) {
	named, related = map[int]bool{}, map[int]bool{}
	texts := make([]string, 0, len(res.Failures))
	for _, f := range res.Failures {
		texts = append(texts, f.Detail)
	}
	if res.Report != nil {
		for _, p := range res.Report.Partitions {
			texts = append(texts, p.Why)
		}
	}
	for _, t := range texts {
		for _, m := range opRef.FindAllStringSubmatch(t, -1) {
			if id, err := strconv.Atoi(m[1]); err == nil && id >= 0 && id < len(h.Ops) {
				named[id] = true
			}
		}
	}
	if res.Report == nil {
		return named, related
	}
	for _, a := range res.Report.Anomalies {
		n := 0
		for i := range h.Ops {
			if n < 20 && !named[i] && touches(&h.Ops[i], a.TP, a.Offset) {
				related[i] = true
				n++
			}
		}
	}
	return named, related
}

// touches reports whether op wrote or read offset off of tp.
func touches(op *linearizability.Op, tp core.TopicPartition, off int64) bool {
	if op.TP != tp {
		return false
	}
	switch op.Kind {
	case linearizability.OpAppend:
		return op.Outcome == linearizability.OK && op.Offset >= 0 && op.Offset <= off &&
			off < op.Offset+int64(len(op.Values))
	case linearizability.OpRead:
		n := len(op.Records)
		return n > 0 && op.Records[0].Offset <= off && off <= op.Records[n-1].Offset
	}
	return false
}

// focusOf is the time the page opens at: the first operation the finding names, else
// the start of the run.
func focusOf(items []tlItem) int64 {
	focus := int64(-1)
	for _, it := range items {
		if it.Mark == 2 && (focus < 0 || it.From < focus) {
			focus = it.From
		}
	}
	return max(focus, 0)
}

// boundItems keeps at most timelineMaxItems: those the finding names or that touch its
// offset first, then the ones nearest the focus in time.
func boundItems(items []tlItem, focus int64) []tlItem {
	if len(items) <= timelineMaxItems {
		return items
	}
	dist := func(it *tlItem) int64 {
		if it.From < focus {
			return focus - it.From
		}
		return it.From - focus
	}
	sort.SliceStable(items, func(i, j int) bool {
		a, b := &items[i], &items[j]
		if a.class != b.class {
			return a.class < b.class
		}
		return dist(a) < dist(b)
	})
	items = items[:timelineMaxItems]
	sort.SliceStable(items, func(i, j int) bool { return items[i].From < items[j].From })
	return items
}

// shownWindow is the time window whose operations are all drawn: between the first and
// the last call of the nearest-in-time ones kept (the whole run when none was left out).
func shownWindow(items []tlItem, total int, end int64) (int64, int64) {
	if total <= len(items) {
		return 0, end
	}
	from, to := end, int64(0)
	for _, it := range items {
		if it.class == 2 {
			from, to = min(from, it.From), max(to, it.From)
		}
	}
	return from, to
}

// packRows gives each item a row in its lane so that bars overlap as little as the
// row bound allows, and returns each lane's row count.
func packRows(items []tlItem, stub int64) map[int]int {
	sort.SliceStable(items, func(i, j int) bool {
		if items[i].Lane != items[j].Lane {
			return items[i].Lane < items[j].Lane
		}
		return items[i].From < items[j].From
	})
	ends := map[int][]int64{}
	rows := map[int]int{}
	for i := range items {
		it := &items[i]
		end := it.To
		if end < it.From {
			end = it.From + stub
		}
		end = max(end, it.From+1)
		lane := ends[it.Lane]
		row := -1
		for r, e := range lane {
			if e <= it.From {
				row = r
				break
			}
		}
		if row < 0 && len(lane) < timelineMaxRows {
			row = len(lane)
			lane = append(lane, 0)
		}
		if row < 0 { // full: the row that frees first
			row = 0
			for r, e := range lane {
				if e < lane[row] {
					row = r
				}
			}
		}
		lane[row] = max(lane[row], end)
		ends[it.Lane] = lane
		it.Row = row
		rows[it.Lane] = max(rows[it.Lane], row+1)
	}
	return rows
}

// spellRows is the row of each kind of span in a node's lane (0: the node's state).
var spellRows = map[string]int{"crash": 0, "down": 0, "pause": 0, "slowdisk": 1,
	"diskerrors": 2, "readerrors": 3, "clog": 4, "metaerrors": 5}

// timelineFaults places the recorded spans and marks on their lanes. Spells end at the
// heal; a node lane gets one row per kind of spell it had.
func (w *World) timelineFaults(index map[int32]int, lanes []tlLane) ([]tlPSpan,
	[]tlPMark) {
	var spans []tlPSpan
	used := map[int]map[int]bool{}
	for _, s := range w.tl.spans {
		lane, ok := index[s.Lane]
		if !ok {
			continue
		}
		to := s.To
		if w.healAt > 0 && s.From < w.healAt && s.Kind != "crash" && s.Kind != "down" {
			to = min(to, w.healAt)
		}
		row := spellRows[s.Kind]
		if used[lane] == nil {
			used[lane] = map[int]bool{}
		}
		used[lane][row] = true
		spans = append(spans, tlPSpan{Lane: lane, Row: row, Kind: s.Kind, From: s.From / 1000,
			To: to / 1000, Text: s.Text})
	}
	// Compact each node lane's rows to the kinds it had.
	for lane, rs := range used {
		if lanes[lane].Kind != "node" {
			continue
		}
		order := map[int]int{0: 0}
		next := 1
		for r := 1; r <= 5; r++ {
			if rs[r] {
				order[r] = next
				next++
			}
		}
		for i := range spans {
			if spans[i].Lane == lane {
				spans[i].Row = order[spans[i].Row]
			}
		}
		lanes[lane].Rows = max(lanes[lane].Rows, next)
	}
	marks := make([]tlPMark, 0, len(w.tl.marks))
	for _, m := range w.tl.marks {
		if n := len(marks); m.Lane < 0 && n > 0 && marks[n-1].Lane < 0 &&
			marks[n-1].Kind == m.Kind && marks[n-1].At == m.At/1000 {
			marks[n-1].Text += "\n" + m.Text // the checker's findings, all at the end
			continue
		}
		lane := -1
		if m.Lane >= 0 {
			l, ok := index[m.Lane]
			if !ok {
				continue
			}
			lane = l
		}
		marks = append(marks, tlPMark{Lane: lane, Kind: m.Kind, At: m.At / 1000, Text: m.Text})
	}
	return spans, marks
}
