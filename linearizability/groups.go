package linearizability

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/sluicemq/sluice/core"
)

// Consumer-group membership (the classic protocol): what simulated group members
// observed, and the coordinator's promises about it.
//
// Every observation names the coordinator incarnation that answered. Membership is
// persisted (a generation's GroupMetadata record is durable before any SyncGroup of it
// is answered), so what a crash may take back is limited:
//
//   - a generation whose SyncGroup was answered (synced) was durable: it is never
//     lost, never reused, and no answer to a request sent after that SyncGroup
//     answer, by any incarnation, shows an older generation;
//   - a generation only seen in JoinGroup answers may be lost in a crash (its record
//     was not durable yet) and its number reused by the next incarnation with another
//     leader and other members; within one incarnation generations never go back.
//
// So join answers are compared within one incarnation, synced plans across all of
// them, and generations within one incarnation and against the newest synced one.

// Group anomaly kinds.
const (
	// SplitBrain: within one generation a partition was assigned to two members, two
	// members were told different leaders or plans, or a member's assignment is not
	// its part of the leader's plan for that generation.
	SplitBrain = "split-brain"
	// GenerationRegressed: an answer showed a generation older than one another answer
	// of the same coordinator showed before it was asked, or older than a generation
	// whose SyncGroup any coordinator had answered before it was asked (generations
	// only increase, and a synced one is durable).
	GenerationRegressed = "generation-regressed"
	// StaleCommitAccepted: an OffsetCommit was acknowledged although its generation was
	// already over when it was sent, or its member was never admitted to that
	// generation (by the coordinator that acknowledged it, or an earlier one whose
	// generation it may have restored).
	StaleCommitAccepted = "stale-commit-accepted"
)

func isGroupKind(kind string) bool {
	return kind == SplitBrain || kind == GenerationRegressed || kind == StaleCommitAccepted
}

// GroupEventKind says what a member observed.
type GroupEventKind uint8

// Group event kinds.
const (
	GroupJoined    GroupEventKind = iota + 1 // JoinGroup answered without error
	GroupSynced                              // SyncGroup answered with an assignment
	GroupHeartbeat                           // Heartbeat answered without error
	GroupCommit                              // OffsetCommit answered (any code)
)

func (k GroupEventKind) String() string {
	switch k {
	case GroupJoined:
		return "joined"
	case GroupSynced:
		return "synced"
	case GroupHeartbeat:
		return "heartbeat"
	default:
		return "commit"
	}
}

// GroupEvent is one answer a group member got from the coordinator.
type GroupEvent struct {
	Kind        GroupEventKind
	Group       string
	Client      int
	Incarnation uint64 // of the coordinator that answered
	Member      string
	Generation  int32 // the answer's (joined) or the request's (others)
	Call        int64
	Return      int64

	Leader   string // joined
	Protocol string // joined
	Topic    string // synced and commit
	// Synced: the partitions assigned, and the plan the assignment carried (the
	// leader's whole plan, see Plan).
	Partitions []int32
	Plan       string
	// Commit: the error code (0: acknowledged) and the op of the commit.
	Code int16
	Op   int
}

// Plan is a leader's assignment for one generation as members carry it in their
// assignment's user data: "gen=G leader=L m1:0,2 m2:1" (members in the order the
// leader listed them; each with its partitions, ascending).
type Plan struct {
	Generation int32
	Leader     string
	Owned      map[string][]int32
}

// EncodePlan renders a plan; members lists the member ids in order.
func EncodePlan(gen int32, leader string, members []string, owned map[string][]int32) string {
	var b strings.Builder
	fmt.Fprintf(&b, "gen=%d leader=%s", gen, leader)
	for _, m := range members {
		b.WriteString(" " + m + ":")
		for i, p := range owned[m] {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(int(p)))
		}
	}
	return b.String()
}

// ParsePlan reads a plan rendered by EncodePlan.
func ParsePlan(s string) (Plan, error) {
	f := strings.Fields(s)
	p := Plan{Owned: map[string][]int32{}}
	if len(f) < 2 || !strings.HasPrefix(f[0], "gen=") || !strings.HasPrefix(f[1], "leader=") {
		return p, fmt.Errorf("not a plan: %q", s)
	}
	g, err := strconv.ParseInt(strings.TrimPrefix(f[0], "gen="), 10, 32)
	if err != nil {
		return p, fmt.Errorf("plan generation: %w", err)
	}
	p.Generation, p.Leader = int32(g), strings.TrimPrefix(f[1], "leader=")
	for _, m := range f[2:] {
		i := strings.LastIndexByte(m, ':')
		if i < 0 {
			return p, fmt.Errorf("plan member %q", m)
		}
		var parts []int32
		if rest := m[i+1:]; rest != "" {
			for _, x := range strings.Split(rest, ",") {
				n, err := strconv.ParseInt(x, 10, 32)
				if err != nil {
					return p, fmt.Errorf("plan partition %q: %w", x, err)
				}
				parts = append(parts, int32(n))
			}
		}
		p.Owned[m[:i]] = parts
	}
	return p, nil
}

// genKey names one generation of one group under one coordinator incarnation.
type genKey struct {
	group string
	inc   uint64
	gen   int32
}

func groupAnomaly(kind, group string, gen int32, format string, args ...any) Anomaly {
	return Anomaly{Kind: kind, TP: core.TopicPartition{Topic: group}, Offset: int64(gen),
		Detail: fmt.Sprintf(format, args...)}
}

// checkGroups runs the three membership checks over h.Groups.
func checkGroups(h *History) []Anomaly {
	var out []Anomaly
	out = append(out, checkSplitBrain(h.Groups)...)
	out = append(out, checkGenerations(h.Groups)...)
	out = append(out, checkStaleCommits(h.Groups)...)
	return out
}

// checkSplitBrain: the joined answers of one generation of one incarnation agree on
// leader and protocol; the synced answers of a generation, whatever incarnation gave
// them (a synced generation is durable, never reused), carry one plan, made for that
// generation by that leader; each member got its own part of it; no partition went to
// two members.
func checkSplitBrain(evs []GroupEvent) []Anomaly {
	var out []Anomaly
	leaders := map[genKey]*GroupEvent{}
	plans := map[genKey]*GroupEvent{}
	owner := map[genKey]map[string]string{} // topic-partition → member
	for i := range evs {
		e := &evs[i]
		k := genKey{e.Group, e.Incarnation, e.Generation}
		switch e.Kind {
		case GroupJoined:
			first := leaders[k]
			if first == nil {
				leaders[k] = e
			} else if first.Leader != e.Leader || first.Protocol != e.Protocol {
				out = append(out, groupAnomaly(SplitBrain, e.Group, e.Generation,
					"members of one generation were told leader %s/%s and leader %s/%s",
					first.Leader, first.Protocol, e.Leader, e.Protocol))
			}
		case GroupSynced:
			pk := genKey{group: e.Group, gen: e.Generation} // every incarnation
			if plans[pk] == nil {
				plans[pk] = e
				owner[pk] = map[string]string{}
			}
			out = append(out, checkSynced(e, plans[pk], leaders[k], owner[pk])...)
		}
	}
	return out
}

func checkSynced(e, first, joined *GroupEvent, owner map[string]string) []Anomaly {
	var out []Anomaly
	bad := func(format string, args ...any) {
		out = append(out, groupAnomaly(SplitBrain, e.Group, e.Generation, "member %s: %s",
			e.Member, fmt.Sprintf(format, args...)))
	}
	if e.Plan != first.Plan {
		bad("got plan %q, member %s got %q in the same generation", e.Plan, first.Member,
			first.Plan)
	}
	p, err := ParsePlan(e.Plan)
	if err != nil {
		bad("assignment without a plan: %v", err)
		return out
	}
	if p.Generation != e.Generation {
		bad("assignment planned for generation %d", p.Generation)
	}
	if joined != nil && p.Leader != joined.Leader {
		bad("plan made by %s, but the generation's leader is %s", p.Leader, joined.Leader)
	}
	mine, listed := p.Owned[e.Member]
	if !listed || !sameInt32s(mine, e.Partitions) {
		bad("assigned %v, the plan gives it %v (listed %v)", e.Partitions, mine, listed)
	}
	for _, part := range e.Partitions {
		tp := fmt.Sprintf("%s-%d", e.Topic, part)
		if o, ok := owner[tp]; ok && o != e.Member {
			bad("%s is also assigned to %s", tp, o)
			continue
		}
		owner[tp] = e.Member
	}
	return out
}

func sameInt32s(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// genObs is one answer that proves the coordinator's generation was gen at some
// point within [call, ret].
type genObs struct {
	call, ret int64
	gen       int32
	ev        *GroupEvent
}

type incKey struct {
	group string
	inc   uint64
}

// observations collects, per group and incarnation, the answers that prove a current
// generation: joins, syncs and heartbeats without error. (An acknowledged commit would
// too, but only from a correct coordinator, which is what is being checked.)
func observations(evs []GroupEvent) ([]incKey, map[incKey][]genObs) {
	by := map[incKey][]genObs{}
	var keys []incKey
	for i := range evs {
		e := &evs[i]
		if e.Kind == GroupCommit {
			continue
		}
		k := incKey{e.Group, e.Incarnation}
		if by[k] == nil {
			keys = append(keys, k)
		}
		by[k] = append(by[k], genObs{call: e.Call, ret: e.Return, gen: e.Generation, ev: e})
	}
	return keys, by
}

// checkGenerations: an answer to a request sent after another answer of the same
// coordinator arrived shows a generation at least as new; and one sent after any
// coordinator answered a SyncGroup shows a generation at least as new as that one.
func checkGenerations(evs []GroupEvent) []Anomaly {
	out := checkIncarnationGenerations(evs)
	synced := syncedIndex(evs)
	for i := range evs {
		e := &evs[i]
		if e.Kind == GroupCommit || len(out) > 20 {
			continue
		}
		if o := synced[e.Group].before(e.Call); o != nil && e.Generation < o.gen {
			out = append(out, groupAnomaly(GenerationRegressed, e.Group, e.Generation,
				"member %s was answered (%s, incarnation %d) with generation %d after "+
					"member %s had been assigned its part of generation %d (incarnation %d),"+
					" which was durable then", e.Member, e.Kind, e.Incarnation, e.Generation,
				o.ev.Member, o.gen, o.ev.Incarnation))
		}
	}
	return out
}

// syncedIndex indexes, per group, the SyncGroup answers of every incarnation: each
// proves its generation durable from its return on.
func syncedIndex(evs []GroupEvent) map[string]*retIndex {
	by := map[string][]genObs{}
	for i := range evs {
		if e := &evs[i]; e.Kind == GroupSynced {
			by[e.Group] = append(by[e.Group], genObs{call: e.Call, ret: e.Return,
				gen: e.Generation, ev: e})
		}
	}
	out := map[string]*retIndex{}
	for g, obs := range by {
		out[g] = newRetIndex(obs)
	}
	return out
}

// checkIncarnationGenerations: within one incarnation, generations never go back.
func checkIncarnationGenerations(evs []GroupEvent) []Anomaly {
	var out []Anomaly
	keys, by := observations(evs)
	for _, k := range keys {
		obs := by[k]
		byRet := append([]genObs(nil), obs...)
		sort.SliceStable(byRet, func(i, j int) bool { return byRet[i].ret < byRet[j].ret })
		byCall := append([]genObs(nil), obs...)
		sort.SliceStable(byCall, func(i, j int) bool { return byCall[i].call < byCall[j].call })
		var best *genObs
		j := 0
		for i := range byCall {
			y := &byCall[i]
			for ; j < len(byRet) && byRet[j].ret < y.call; j++ {
				if best == nil || byRet[j].gen > best.gen {
					best = &byRet[j]
				}
			}
			if best != nil && y.gen < best.gen {
				out = append(out, groupAnomaly(GenerationRegressed, k.group, y.gen,
					"member %s was answered (%s) with generation %d after member %s had "+
						"been answered (%s) with generation %d by the same coordinator",
					y.ev.Member, y.ev.Kind, y.gen, best.ev.Member, best.ev.Kind, best.gen))
				if len(out) > 20 {
					return out
				}
			}
		}
	}
	return out
}

// checkStaleCommits: an acknowledged OffsetCommit names a member admitted to the
// commit's generation, and that generation was not yet over when the commit was sent:
// the acknowledging coordinator had not answered a newer one, and no coordinator had
// answered a SyncGroup of a newer one.
//
// Admitted means: joined that generation in the acknowledging incarnation or an
// earlier one, since a restarted coordinator restores the members of the generation
// it stored. (A lost generation whose number was reused is not told apart from a
// restored one here; the generation checks cover that case.)
func checkStaleCommits(evs []GroupEvent) []Anomaly {
	var out []Anomaly
	admitted := map[genKey]map[string]uint64{} // (group, gen) → member → first incarnation
	for i := range evs {
		if e := &evs[i]; e.Kind == GroupJoined {
			k := genKey{group: e.Group, gen: e.Generation}
			if admitted[k] == nil {
				admitted[k] = map[string]uint64{}
			}
			if inc, ok := admitted[k][e.Member]; !ok || e.Incarnation < inc {
				admitted[k][e.Member] = e.Incarnation
			}
		}
	}
	_, by := observations(evs)
	newest := map[incKey]*retIndex{}
	for k, obs := range by {
		newest[k] = newRetIndex(obs)
	}
	synced := syncedIndex(evs)
	for i := range evs {
		e := &evs[i]
		if e.Kind != GroupCommit || e.Code != 0 {
			continue
		}
		inc, ok := admitted[genKey{group: e.Group, gen: e.Generation}][e.Member]
		if !ok || inc > e.Incarnation {
			out = append(out, groupAnomaly(StaleCommitAccepted, e.Group, e.Generation,
				"op %d: commit by member %s in generation %d acknowledged by a coordinator "+
					"that neither admitted it to that generation nor could have restored it",
				e.Op, e.Member, e.Generation))
			continue
		}
		o := newest[incKey{e.Group, e.Incarnation}].before(e.Call)
		if s := synced[e.Group].before(e.Call); o == nil || (s != nil && s.gen > o.gen) {
			o = s
		}
		if o != nil && o.gen > e.Generation {
			out = append(out, groupAnomaly(StaleCommitAccepted, e.Group, e.Generation,
				"op %d: commit by member %s in generation %d acknowledged, but member %s "+
					"had been answered with generation %d (incarnation %d) before it was sent",
				e.Op, e.Member, e.Generation, o.ev.Member, o.gen, o.ev.Incarnation))
		}
	}
	return out
}

// retIndex answers "the newest generation answered before t" in O(log n).
type retIndex struct {
	obs  []genObs // by return time
	best []int    // best[i]: index of the newest generation among obs[:i+1]
}

func newRetIndex(obs []genObs) *retIndex {
	x := &retIndex{obs: append([]genObs(nil), obs...)}
	sort.SliceStable(x.obs, func(i, j int) bool { return x.obs[i].ret < x.obs[j].ret })
	x.best = make([]int, len(x.obs))
	for i := range x.obs {
		x.best[i] = i
		if i > 0 && x.obs[x.best[i-1]].gen >= x.obs[i].gen {
			x.best[i] = x.best[i-1]
		}
	}
	return x
}

// before returns the observation with the newest generation among those answered
// before t, or nil.
func (x *retIndex) before(t int64) *genObs {
	if x == nil {
		return nil
	}
	n := sort.Search(len(x.obs), func(i int) bool { return x.obs[i].ret >= t })
	if n == 0 {
		return nil
	}
	return &x.obs[x.best[n-1]]
}
