package sim

import (
	"reflect"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The timeline recorder keeps what timeline.html draws (timeline_page.go): node states,
// fault spells, client requests and when failures were found. It only reads the world:
// it draws no random number, schedules no event and folds nothing into the trace, so a
// run hashes the same with it (Options.Timeline) as without. Off, each hook is one nil
// check.

// Bounds on what the recorder keeps, so that a long run cannot grow it without end; the
// page bounds what it draws further (timelineMaxItems).
const (
	tlMaxSpans = 20_000
	tlMaxMarks = 20_000
	tlMaxReqs  = 400_000
)

// tlSpan is something that lasted on one lane: a node down or paused, a fault spell,
// a network partition of a client.
type tlSpan struct {
	Lane     int32
	Kind     string
	From, To int64 // virtual ns; To < 0: still open (closed at the end of the run)
	Text     string
}

// tlMark is an instant on one lane (-1: every lane): a reset, bit rot, a disk error, a
// phase change, a failure found.
type tlMark struct {
	Lane int32
	Kind string
	At   int64
	Text string
}

// tlReq is one request a client sent and how it ended.
type tlReq struct {
	Lane       int32
	API        int16
	Sent, Done int64
	Code       int16 // first error code of the answer (0: none)
	Lost       string
}

type timeline struct {
	spans   []tlSpan
	marks   []tlMark
	reqs    []tlReq
	open    map[[2]int32]int // (lane, what) → index of its open span
	dropped int              // spans, marks and requests not kept (bounds above)
}

// Keys of open spans per lane.
const (
	tlOpenDown int32 = iota
	tlOpenPause
)

func newTimeline() *timeline { return &timeline{open: map[[2]int32]int{}} }

func (t *timeline) span(lane int32, kind string, from, to int64, text string) int {
	if len(t.spans) >= tlMaxSpans {
		t.dropped++
		return -1
	}
	t.spans = append(t.spans, tlSpan{Lane: lane, Kind: kind, From: from, To: to, Text: text})
	return len(t.spans) - 1
}

func (t *timeline) mark(lane int32, kind string, at int64, text string) {
	if len(t.marks) >= tlMaxMarks {
		t.dropped++
		return
	}
	t.marks = append(t.marks, tlMark{Lane: lane, Kind: kind, At: at, Text: text})
}

// begin opens a span that a later end closes (a node down, a pause).
func (t *timeline) begin(lane, what int32, kind string, at int64, text string) {
	t.end(lane, what, at)
	if i := t.span(lane, kind, at, -1, text); i >= 0 {
		t.open[[2]int32{lane, what}] = i
	}
}

func (t *timeline) end(lane, what int32, at int64) {
	k := [2]int32{lane, what}
	if i, ok := t.open[k]; ok {
		t.spans[i].To = at
		delete(t.open, k)
	}
}

// closeAll ends every open span at the end of the run.
func (t *timeline) closeAll(at int64) {
	keys := make([][2]int32, 0, len(t.open))
	for k := range t.open {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i][0] < keys[j][0] || (keys[i][0] == keys[j][0] && keys[i][1] < keys[j][1])
	})
	for _, k := range keys {
		t.end(k[0], k[1], at)
	}
}

// The hooks the world calls, each a no-op when the recorder is off.

// tlNodeDown: the node's incarnation ended (why: "crash", "process killed", ...).
func (w *World) tlNodeDown(n *node, why string) {
	if w.tl == nil {
		return
	}
	w.tl.end(n.id, tlOpenPause, w.now)
	kind := "down"
	switch why {
	case "crash":
		kind, why = "crash", "power loss: unsynced bytes lost, restart after a drawn downtime"
	case "process killed":
		why = "process killed (kill -9): the page cache survives; restart after a drawn " +
			"downtime"
	case "disk lost":
		kind, why = "crash", "disk lost: the machine dies and restarts with an empty data "+
			"directory, state store and metadata log"
	case "process restart":
		why = "process restarted at the heal (after disk or read errors)"
	}
	w.tl.begin(n.id, tlOpenDown, kind, w.now, why)
}

// tlNodeUp: a new incarnation booted.
func (w *World) tlNodeUp(n *node) {
	if w.tl != nil {
		w.tl.end(n.id, tlOpenDown, w.now)
	}
}

func (w *World) tlPause(n *node, on bool) {
	if w.tl == nil {
		return
	}
	if on {
		w.tl.begin(n.id, tlOpenPause, "pause", w.now, "the node does not step (GC pause, "+
			"SIGSTOP); its inputs queue")
		return
	}
	w.tl.end(n.id, tlOpenPause, w.now)
}

// tlSpell records a fault spell on a node lane from now until `until`.
func (w *World) tlSpell(n *node, k faultKind, until int64) {
	if w.tl == nil {
		return
	}
	text := map[faultKind]string{
		fSlowDisk:   "slow disk: fsync and I/O latency multiplied",
		fDiskErrors: "disk errors: writes and fsyncs may fail (EIO/ENOSPC)",
		fClog:       "clogged network: every path to the node slower",
		fMetaErrors: "metadata errors: proposals may be rejected",
		fReadErrors: "read errors: file reads may fail with EIO",
	}[k]
	w.tl.span(n.id, faultNames[k], w.now, until, text)
}

// tlPartition records a client cut off from the node until the given times.
func (w *World) tlPartition(cl *clientBase, toNodeUntil, toClientUntil int64) {
	if w.tl == nil {
		return
	}
	switch {
	case toNodeUntil > w.now && toClientUntil > w.now:
		w.tl.span(cl.actor, "partition", w.now, max(toNodeUntil, toClientUntil),
			"network partition: client and node cannot reach each other")
	case toNodeUntil > w.now:
		w.tl.span(cl.actor, "partition", w.now, toNodeUntil,
			"one-way partition: the client's messages do not reach the node")
	case toClientUntil > w.now:
		w.tl.span(cl.actor, "partition", w.now, toClientUntil,
			"one-way partition: the node's answers do not reach the client")
	}
}

func (w *World) tlMark(lane int32, kind, text string) {
	if w.tl != nil {
		w.tl.mark(lane, kind, w.now, text)
	}
}

// tlRequest records one request of a client, answered (resp) or not (err).
func (w *World) tlRequest(cb *clientBase, cl *call, resp kmsg.Response, err error) {
	if w.tl == nil {
		return
	}
	if len(w.tl.reqs) >= tlMaxReqs {
		w.tl.dropped++
		return
	}
	r := tlReq{Lane: cb.actor, API: cl.key, Sent: cl.sent, Done: w.now}
	switch {
	case err != nil:
		r.Lost = err.Error()
	case resp != nil:
		seen := map[int16]bool{}
		collectCodes(reflect.ValueOf(resp), seen)
		codes := make([]int16, 0, len(seen))
		for c := range seen {
			if c != 0 {
				codes = append(codes, c)
			}
		}
		sort.Slice(codes, func(i, j int) bool { return codes[i] < codes[j] })
		if len(codes) > 0 {
			r.Code = codes[0]
		}
	}
	w.tl.reqs = append(w.tl.reqs, r)
}

// tlReset marks a connection reset on the client's and the node's lanes.
func (w *World) tlReset(c *conn) {
	if w.tl == nil {
		return
	}
	text := "connection reset by a fault: requests in flight have unknown outcomes"
	w.tl.mark(c.cl.actor, "reset", w.now, text)
	w.tl.mark(c.n.id, "reset", w.now, text+" ("+c.cl.name+")")
}
