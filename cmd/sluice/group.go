package main

// `sluice group`: list, describe (with lag), delete and reset the offsets of consumer
// groups through kadm, in the manner of kafka-consumer-groups.sh.
//
// Lag of a partition that the group has never committed: Kafka's tool prints "-" for
// both the offset and the lag there. Sluice prints "-" for the offset but counts the lag
// from the partition's start offset (kadm.CalculateGroupLagWithStartOffsets), because
// that is every record a consumer starting from the beginning still has to read, and a
// dash would hide exactly the backlog an operator runs `describe` to see.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func init() {
	register("group", command{
		summary: "list, describe, delete consumer groups and reset their offsets",
		run:     runGroup,
	})
}

var groupActions = map[string]topicAction{
	"list":          {"list groups with their state", groupList},
	"describe":      {"show members, committed offsets and lag", groupDescribe},
	"delete":        {"delete groups that have no members", groupDelete},
	"reset-offsets": {"plan or commit new offsets for a group without members", groupReset},
}

func runGroup(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || isHelp(args[0]) {
		groupUsage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	a, ok := groupActions[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "sluice group: unknown action %q\n\n", args[0])
		groupUsage(stderr)
		return 2
	}
	return exitStatus("sluice group "+args[0], a.run(args[1:], stdout, stderr), stderr)
}

func groupUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: sluice group <action> [flags]\n\nactions:")
	for _, name := range sortedKeys(groupActions) {
		fmt.Fprintf(w, "  %-14s %s\n", name, groupActions[name].summary)
	}
	fmt.Fprintln(w, "\nRun 'sluice group <action> -h' for an action's flags.")
}

// Kafka's group state names, as DescribeGroups and ListGroups report them.
const (
	stateEmpty = "Empty"
	stateDead  = "Dead"
)

// groupErr words an error about group: the group error codes get sentences of their
// own, everything else goes through friendly.
func groupErr(err error, group, detail string) error {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return friendly(err, "", detail)
	}
	switch ke {
	case kerr.GroupIDNotFound:
		return fmt.Errorf("group %q does not exist", group)
	case kerr.NonEmptyGroup:
		return fmt.Errorf("group %q still has members (NON_EMPTY_GROUP): a group can "+
			"only be deleted once all of its consumers have stopped", group)
	case kerr.InvalidGroupID:
		return fmt.Errorf("%q is not a valid group name", group)
	case kerr.CoordinatorLoadInProgress:
		return errors.New("the group coordinator is still loading offsets; try again shortly")
	case kerr.UnknownMemberID, kerr.IllegalGeneration, kerr.RebalanceInProgress,
		kerr.FencedInstanceID:
		return fmt.Errorf("group %q gained members meanwhile; stop its consumers and retry",
			group)
	}
	return friendly(err, "", detail)
}

// groupsArg parses the actions that take one or more group names and the client flags.
func groupsArg(name string, args []string, stderr io.Writer) (clientFlags, []string, error) {
	var cf clientFlags
	fs := newFlagSet(name, name+" GROUP...", stderr)
	cf.register(fs)
	pos, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return cf, nil, err
	}
	if err != nil {
		return cf, nil, errUsage // flag has printed the message and the usage
	}
	if len(pos) == 0 {
		return cf, nil, usageErr(fs, "missing GROUP")
	}
	for _, g := range pos {
		if g == "" {
			return cf, nil, usageErr(fs, "a group name cannot be empty")
		}
	}
	return cf, dedupe(pos), checkClient(fs, cf)
}

func dedupe(xs []string) []string {
	seen := map[string]bool{}
	out := xs[:0:0]
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// withAdmin connects, runs f under a context bounded by steps × --timeout, and closes.
func withAdmin(cf clientFlags, steps int, f func(ctx context.Context, adm *kadm.Client) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), cf.timeout*time.Duration(steps))
	defer cancel()
	adm, done, err := admin(ctx, cf)
	if err != nil {
		return err
	}
	defer done()
	return f(ctx, adm)
}

func groupList(args []string, stdout, stderr io.Writer) error {
	var cf clientFlags
	fs := newFlagSet("sluice group list", "sluice group list", stderr)
	cf.register(fs)
	if _, err := parseCommand(fs, args); err != nil {
		return err
	}
	if err := checkClient(fs, cf); err != nil {
		return err
	}
	return withAdmin(cf, 2, func(ctx context.Context, adm *kadm.Client) error {
		groups, err := adm.ListGroups(ctx)
		if err != nil {
			return groupErr(err, "", "")
		}
		return printGroupList(stdout, groups)
	})
}

func printGroupList(w io.Writer, groups kadm.ListedGroups) error {
	if len(groups) == 0 {
		_, err := fmt.Fprintln(w, "no consumer groups")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tSTATE\tPROTOCOL-TYPE")
	for _, g := range groups.Sorted() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", g.Group, orDash(g.State), orDash(g.ProtocolType))
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func groupDescribe(args []string, stdout, stderr io.Writer) error {
	cf, groups, err := groupsArg("sluice group describe", args, stderr)
	if err != nil {
		return err
	}
	return withAdmin(cf, 5, func(ctx context.Context, adm *kadm.Client) error {
		lags, err := adm.Lag(ctx, groups...)
		if err != nil {
			return groupErr(err, groups[0], "")
		}
		var failed []error
		printed := 0
		for _, g := range groups {
			l, ok := lags[g]
			err := describeErr(l, ok, g)
			if err != nil {
				failed = append(failed, err)
				continue
			}
			if printed > 0 {
				fmt.Fprintln(stdout)
			}
			printed++
			if err := printGroupLag(stdout, l); err != nil {
				return err
			}
		}
		return joinErrs(failed)
	})
}

// describeErr is why a group cannot be described, or nil. A group the coordinator does
// not know is answered as state Dead without an error, as Kafka does before v6.
func describeErr(l kadm.DescribedGroupLag, ok bool, group string) error {
	switch {
	case !ok:
		return fmt.Errorf("the broker did not answer for group %q", group)
	case l.DescribeErr != nil:
		return groupErr(l.DescribeErr, group, "")
	case l.State == stateDead && len(l.Members) == 0 && len(l.Lag.Sorted()) == 0:
		return groupErr(kerr.GroupIDNotFound, group, "")
	case l.FetchErr != nil:
		return fmt.Errorf("group %q: fetching its offsets: %v", group,
			groupErr(l.FetchErr, group, ""))
	}
	return nil
}

// joinErrs puts several per-group failures on separate lines under one error.
func joinErrs(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	parts := make([]string, len(errs))
	for i, e := range errs {
		parts[i] = e.Error()
	}
	return errors.New(strings.Join(parts, "\n  "))
}

func printGroupLag(w io.Writer, l kadm.DescribedGroupLag) error {
	protocol := orDash(l.ProtocolType)
	if l.Protocol != "" {
		protocol += " (" + l.Protocol + ")"
	}
	fmt.Fprintf(w, "Group: %s\nState: %s\nProtocol: %s\n", l.Group, l.State, protocol)
	if err := printMembers(w, l.Members); err != nil {
		return err
	}
	rows := l.Lag.Sorted()
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "Offsets: none committed, nothing assigned")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tCOMMITTED\tEND\tLAG\tMEMBER")
	var total int64
	unknown := 0
	for _, r := range rows {
		committed, end, lag := "-", "?", "?"
		if r.Commit.At >= 0 {
			committed = strconv.FormatInt(r.Commit.At, 10)
		}
		if r.End.Err == nil {
			end = strconv.FormatInt(r.End.Offset, 10)
		}
		if r.Err == nil && r.Lag >= 0 {
			lag = strconv.FormatInt(r.Lag, 10)
			total += r.Lag
		} else {
			unknown++
		}
		owner := "-"
		if r.Member != nil {
			owner = r.Member.MemberID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Topic, partitionText(r.Partition),
			committed, end, lag, owner)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if unknown > 0 {
		_, err := fmt.Fprintf(w, "Total lag: %d (%d partition(s) unknown)\n", total, unknown)
		return err
	}
	_, err := fmt.Fprintf(w, "Total lag: %d\n", total)
	return err
}

// partitionText shows kadm's placeholder partition -1 (a topic it could not list) as "?".
func partitionText(p int32) string {
	if p < 0 {
		return "?"
	}
	return strconv.Itoa(int(p))
}

func printMembers(w io.Writer, members []kadm.DescribedGroupMember) error {
	if len(members) == 0 {
		_, err := fmt.Fprint(w, "Members: none\n\n")
		return err
	}
	fmt.Fprintf(w, "Members: %d\n", len(members))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER-ID\tCLIENT-ID\tHOST\tASSIGNED")
	for _, m := range members {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.MemberID, orDash(m.ClientID),
			orDash(m.ClientHost), assignedText(m.Assigned))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

// assignedText shows a member's partitions as "t:0,1 u:2", or "-" when it has none
// (a rebalance in progress, or a protocol other than "consumer").
func assignedText(a kadm.GroupMemberAssignment) string {
	c, ok := a.AsConsumer()
	if !ok || len(c.Topics) == 0 {
		return "-"
	}
	var parts []string
	for _, t := range c.Topics {
		ps := append([]int32(nil), t.Partitions...)
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		parts = append(parts, t.Topic+":"+ids(ps))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func groupDelete(args []string, stdout, stderr io.Writer) error {
	cf, groups, err := groupsArg("sluice group delete", args, stderr)
	if err != nil {
		return err
	}
	return withAdmin(cf, 3, func(ctx context.Context, adm *kadm.Client) error {
		resps, err := adm.DeleteGroups(ctx, groups...)
		if err != nil {
			return groupErr(err, groups[0], "")
		}
		var failed []error
		for _, g := range groups {
			r, ok := resps[g]
			switch {
			case !ok:
				failed = append(failed, fmt.Errorf("the broker did not answer for group %q", g))
			case r.Err != nil:
				failed = append(failed, groupErr(r.Err, g, r.ErrMessage))
			default:
				fmt.Fprintf(stdout, "deleted group %q\n", g)
			}
		}
		return joinErrs(failed)
	})
}

// resetMode is how reset-offsets picks each partition's new offset.
type resetMode int

const (
	resetNone resetMode = iota
	resetEarliest
	resetLatest
	resetToOffset
	resetShiftBy
	resetToDatetime
)

// resetOptions are the parsed arguments of `sluice group reset-offsets`.
type resetOptions struct {
	client  clientFlags
	group   string
	topics  topicPartitions
	mode    resetMode
	n       int64 // --to-offset or --shift-by
	at      time.Time
	execute bool
}

// topicPartitions is the repeatable --topic T[:P,P...] flag. A nil partition list
// means every partition of the topic.
type topicPartitions struct {
	order []string
	parts map[string][]int32
}

func (tp *topicPartitions) String() string {
	if tp == nil {
		return ""
	}
	return strings.Join(tp.order, ",")
}

func (tp *topicPartitions) Set(s string) error {
	topic, list, hasList := strings.Cut(s, ":")
	if topic = strings.TrimSpace(topic); topic == "" {
		return fmt.Errorf("want TOPIC or TOPIC:P,P..., got %q", s)
	}
	var ps []int32
	if hasList {
		for _, f := range strings.Split(list, ",") {
			p, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
			if err != nil || p < 0 {
				return fmt.Errorf("%q is not a partition number (in %q)", f, s)
			}
			ps = append(ps, int32(p))
		}
	}
	if tp.parts == nil {
		tp.parts = map[string][]int32{}
	}
	if _, dup := tp.parts[topic]; dup {
		return fmt.Errorf("topic %q given twice", topic)
	}
	tp.order = append(tp.order, topic)
	tp.parts[topic] = ps
	return nil
}

// modeFlag is a reset-offsets mode flag: setting it records which mode was chosen, so
// that giving two of them can be refused.
type modeFlag struct {
	o     *resetOptions
	mode  resetMode
	chose *[]string
	name  string
	parse func(s string) error // nil for the boolean modes
}

func (m *modeFlag) String() string { return "" }

func (m *modeFlag) IsBoolFlag() bool { return m.parse == nil }

func (m *modeFlag) Set(s string) error {
	if m.parse == nil {
		if b, err := strconv.ParseBool(s); err != nil || !b {
			return errors.New("takes no value; leave the flag out instead")
		}
	} else if err := m.parse(s); err != nil {
		return err
	}
	m.o.mode = m.mode
	*m.chose = append(*m.chose, "--"+m.name)
	return nil
}

const resetSynopsis = "sluice group reset-offsets GROUP --topic T[:P,P...] " +
	"(--to-earliest | --to-latest | --to-offset N | --shift-by N | --to-datetime RFC3339) " +
	"[--execute]"

func parseReset(args []string, stderr io.Writer) (resetOptions, error) {
	var o resetOptions
	var chose []string
	fs := newFlagSet("sluice group reset-offsets", resetSynopsis, stderr)
	o.client.register(fs)
	fs.Var(&o.topics, "topic", "`T[:P,P...]`: a topic, or some of its partitions; repeatable")
	fs.BoolVar(&o.execute, "execute", false, "commit the new offsets (default: only print the plan)")
	mode := func(name string, m resetMode, usage string, parse func(string) error) {
		fs.Var(&modeFlag{o: &o, mode: m, chose: &chose, name: name, parse: parse}, name, usage)
	}
	mode("to-earliest", resetEarliest, "reset to each partition's start offset", nil)
	mode("to-latest", resetLatest, "reset to each partition's end offset", nil)
	mode("to-offset", resetToOffset, "reset to offset `N` (clamped to the partition's range)",
		func(s string) error {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				return errors.New("want an offset of 0 or more")
			}
			o.n = n
			return nil
		})
	mode("shift-by", resetShiftBy, "move the committed offset by `N` (negative: back; clamped)",
		func(s string) error {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return errors.New("want a whole number of records, like 10 or -10")
			}
			o.n = n
			return nil
		})
	mode("to-datetime", resetToDatetime,
		"reset to the first record at or after `TIME` (RFC 3339, like 2026-01-02T15:04:05Z)",
		func(s string) error {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return errors.New("want an RFC 3339 time like 2026-01-02T15:04:05Z")
			}
			o.at = t
			return nil
		})
	pos, err := parseCommand(fs, args, "GROUP")
	if err != nil {
		return o, err
	}
	o.group = pos[0]
	switch {
	case len(chose) == 0:
		return o, usageErr(fs, "say where to reset to: one of --to-earliest, --to-latest, "+
			"--to-offset, --shift-by, --to-datetime")
	case len(chose) > 1:
		return o, usageErr(fs, "give only one of %s", strings.Join(chose, ", "))
	case len(o.topics.order) == 0:
		return o, usageErr(fs, "say which offsets to reset with --topic T or --topic T:P,P...")
	}
	return o, checkClient(fs, o.client)
}

// resetRow is one partition of a reset plan.
type resetRow struct {
	topic     string
	partition int32
	current   int64 // -1: nothing committed
	target    int64
	note      string // why target differs from what was asked, if it does
}

func groupReset(args []string, stdout, stderr io.Writer) error {
	o, err := parseReset(args, stderr)
	if err != nil {
		return err
	}
	return withAdmin(o.client, 6, func(ctx context.Context, adm *kadm.Client) error {
		state, members, err := groupState(ctx, adm, o.group)
		if err != nil {
			return err
		}
		active := state != stateEmpty && state != stateDead
		if active && o.execute {
			return refuseActive(o.group, state, members)
		}
		plan, err := planReset(ctx, adm, o)
		if err != nil {
			return err
		}
		if err := printPlan(stdout, plan); err != nil {
			return err
		}
		if !o.execute {
			fmt.Fprintln(stdout, "Dry run: nothing changed. Add --execute to commit these offsets.")
			if active {
				fmt.Fprintf(stdout, "Note: %v\n", refuseActive(o.group, state, members))
			}
			return nil
		}
		return commitPlan(ctx, adm, o.group, plan, stdout)
	})
}

func refuseActive(group, state string, members int) error {
	return fmt.Errorf("group %q is %s with %d member(s): offsets can only be reset while "+
		"the group has no members; stop its consumers first", group, state, members)
}

// groupState describes one group; a group that does not exist yet is state Dead.
func groupState(ctx context.Context, adm *kadm.Client, group string) (string, int, error) {
	ds, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return "", 0, groupErr(err, group, "")
	}
	d, ok := ds[group]
	if !ok {
		return "", 0, fmt.Errorf("the broker did not answer for group %q", group)
	}
	if d.Err != nil {
		return "", 0, groupErr(d.Err, group, d.ErrMessage)
	}
	return d.State, len(d.Members), nil
}

// planReset works out each requested partition's current and new offset.
func planReset(ctx context.Context, adm *kadm.Client, o resetOptions) ([]resetRow, error) {
	topics := o.topics.order
	starts, err := listOffsets(ctx, topics, adm.ListStartOffsets)
	if err != nil {
		return nil, err
	}
	ends, err := listOffsets(ctx, topics, adm.ListEndOffsets)
	if err != nil {
		return nil, err
	}
	var byTime kadm.ListedOffsets
	if o.mode == resetToDatetime {
		byTime, err = listOffsets(ctx, topics, func(ctx context.Context, ts ...string) (kadm.ListedOffsets, error) {
			return adm.ListOffsetsAfterMilli(ctx, o.at.UnixMilli(), ts...)
		})
		if err != nil {
			return nil, err
		}
	}
	committed, err := adm.FetchOffsets(ctx, o.group)
	if err != nil {
		return nil, groupErr(err, o.group, "")
	}
	var plan []resetRow
	for _, t := range topics {
		ps, err := partitionsOf(t, o.topics.parts[t], ends)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			row := resetRow{topic: t, partition: p, current: -1}
			if c, ok := committed.Lookup(t, p); ok && c.Err == nil && c.At >= 0 {
				row.current = c.At
			}
			start, _ := starts.Lookup(t, p)
			end, _ := ends.Lookup(t, p)
			bt, _ := byTime.Lookup(t, p)
			if err := row.aim(o, start.Offset, end.Offset, bt.Offset); err != nil {
				return nil, err
			}
			plan = append(plan, row)
		}
	}
	return plan, nil
}

// listOffsets runs one ListOffsets flavour and turns any partition's error into one.
func listOffsets(ctx context.Context, topics []string,
	list func(context.Context, ...string) (kadm.ListedOffsets, error)) (kadm.ListedOffsets, error) {
	l, err := list(ctx, topics...)
	if err != nil {
		return nil, friendly(err, topics[0], "")
	}
	for _, t := range topics {
		ps, ok := l[t]
		if !ok {
			return nil, friendly(kerr.UnknownTopicOrPartition, t, "")
		}
		for _, p := range ps {
			if p.Err != nil {
				return nil, friendly(p.Err, t, "")
			}
		}
	}
	return l, nil
}

// partitionsOf checks the requested partitions of topic exist (none requested: all).
func partitionsOf(topic string, want []int32, ends kadm.ListedOffsets) ([]int32, error) {
	have := ends[topic]
	if len(want) == 0 {
		for p := range have {
			want = append(want, p)
		}
	}
	out := dedupeInt32(want)
	for _, p := range out {
		if _, ok := have[p]; !ok {
			return nil, fmt.Errorf("partition %d does not exist in topic %q (it has %d)",
				p, topic, len(have))
		}
	}
	return out, nil
}

func dedupeInt32(xs []int32) []int32 {
	out := append([]int32(nil), xs...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	k := 0
	for i, x := range out {
		if i == 0 || x != out[k-1] {
			out[k] = x
			k++
		}
	}
	return out[:k]
}

// aim sets the row's target from the mode, clamped to [start, end] as Kafka does: an
// offset outside the log would only make the consumer reset again on its own.
func (r *resetRow) aim(o resetOptions, start, end, byTime int64) error {
	want := int64(0)
	switch o.mode {
	case resetEarliest:
		want = start
	case resetLatest:
		want = end
	case resetToOffset:
		want = o.n
	case resetShiftBy:
		if r.current < 0 {
			return fmt.Errorf("cannot shift partition %d of topic %q: group %q has no "+
				"committed offset there (use --to-earliest, --to-latest or --to-offset)",
				r.partition, r.topic, o.group)
		}
		want = r.current + o.n
		if o.n > 0 && want < r.current { // overflow: saturate, then clamp below
			want = math.MaxInt64
		}
	case resetToDatetime:
		want = byTime
		if want < 0 { // no record at or after the time
			want = end
		}
	}
	r.target = want
	switch {
	case want < start:
		r.target = start
		r.note = fmt.Sprintf("%d is before the start; using the start", want)
	case want > end:
		r.target = end
		r.note = fmt.Sprintf("%d is past the end; using the end", want)
	}
	return nil
}

func printPlan(w io.Writer, plan []resetRow) error {
	notes := false
	for _, r := range plan {
		notes = notes || r.note != ""
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := "TOPIC\tPARTITION\tCURRENT\tNEW"
	if notes {
		header += "\tNOTE"
	}
	fmt.Fprintln(tw, header)
	for _, r := range plan {
		cur := "-"
		if r.current >= 0 {
			cur = strconv.FormatInt(r.current, 10)
		}
		line := fmt.Sprintf("%s\t%d\t%s\t%d", r.topic, r.partition, cur, r.target)
		if r.note != "" {
			line += "\t" + r.note
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// commitPlan commits the plan's offsets as an admin commit (no member, no generation),
// which the coordinator accepts only while the group has no members.
func commitPlan(ctx context.Context, adm *kadm.Client, group string, plan []resetRow,
	stdout io.Writer) error {
	var offs kadm.Offsets
	for _, r := range plan {
		offs.AddOffset(r.topic, r.partition, r.target, -1)
	}
	resps, err := adm.CommitOffsets(ctx, group, offs)
	if err != nil {
		return groupErr(err, group, "")
	}
	var first error
	resps.EachError(func(r kadm.OffsetResponse) {
		if first == nil {
			first = fmt.Errorf("committing partition %d of topic %q: %v", r.Partition,
				r.Topic, groupErr(r.Err, group, ""))
		}
	})
	if first != nil {
		return first
	}
	_, err = fmt.Fprintf(stdout, "Committed new offsets for %d partition(s) of group %q.\n",
		len(plan), group)
	return err
}
