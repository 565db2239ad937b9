package main

// `sluice quota`: set, list and remove client quotas (AlterClientQuotas and
// DescribeClientQuotas through kadm), in the manner of kafka-configs.sh --entity-type
// users/clients. An entity is --user, --client-id or both; the name <default> is the
// type's default entity.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func init() {
	register("quota", command{
		summary: "set, list and remove client quotas (byte rates per user and client id)",
		run:     runQuota,
	})
}

var quotaActions = map[string]topicAction{
	"set":    {"set quota values of a user, a client id or both", quotaSet},
	"list":   {"list the quotas (of one entity, or all)", quotaList},
	"remove": {"remove quota values of an entity", quotaRemove},
}

func runQuota(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || isHelp(args[0]) {
		fmt.Fprintln(stderr, "usage: sluice quota <action> [flags]\n\nactions:")
		for _, name := range sortedKeys(quotaActions) {
			fmt.Fprintf(stderr, "  %-8s %s\n", name, quotaActions[name].summary)
		}
		fmt.Fprintln(stderr, "\nkeys: producer_byte_rate, consumer_byte_rate (bytes per second), "+
			"request_percentage (% of one request handler's time)\nRun 'sluice quota <action> -h' "+
			"for an action's flags.")
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	a, ok := quotaActions[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "sluice quota: unknown action %q\n", args[0])
		return 2
	}
	return exitStatus("sluice quota "+args[0], a.run(args[1:], stdout, stderr), stderr)
}

// quotaFlags are the client flags and the entity.
type quotaFlags struct {
	cf             clientFlags
	user, clientID string
	hasUser, hasID bool
}

func (q *quotaFlags) register(fs *flag.FlagSet) {
	q.cf.register(fs)
	fs.Func("user", "the user (the principal's name; ANONYMOUS without authentication; "+
		"<default>: every user without a quota of its own)", func(s string) error {
		q.user, q.hasUser = s, true
		return nil
	})
	fs.Func("client-id", "the client id (<default>: every client id without a quota of "+
		"its own)", func(s string) error {
		q.clientID, q.hasID = s, true
		return nil
	})
}

// entity is the flags' entity; a name <default> is the default (null).
func (q *quotaFlags) entity() kadm.ClientQuotaEntity {
	var e kadm.ClientQuotaEntity
	add := func(typ, name string) {
		c := kadm.ClientQuotaEntityComponent{Type: typ}
		if name != "<default>" {
			c.Name = &name
		}
		e = append(e, c)
	}
	if q.hasUser {
		add("user", q.user)
	}
	if q.hasID {
		add("client-id", q.clientID)
	}
	return e
}

// parseQuotaCommand parses an action's flags and positional arguments; an entity is
// required unless optional.
func parseQuotaCommand(name, synopsis string, args []string, stderr io.Writer,
	optional bool) (*quotaFlags, []string, error) {
	q := &quotaFlags{}
	fs := newFlagSet(name, synopsis, stderr)
	q.register(fs)
	pos, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, errUsage
	}
	if !optional && !q.hasUser && !q.hasID {
		return nil, nil, usageErr(fs, "name the entity: --user, --client-id or both")
	}
	return q, pos, checkClient(fs, q.cf)
}

func quotaSet(args []string, stdout, stderr io.Writer) error {
	q, pos, err := parseQuotaCommand("sluice quota set", "sluice quota set "+
		"[--user NAME] [--client-id NAME] KEY=VALUE...", args, stderr, false)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return errors.New("missing KEY=VALUE (e.g. producer_byte_rate=1048576)")
	}
	var ops []kadm.AlterClientQuotaOp
	for _, kv := range pos {
		k, v, ok := strings.Cut(kv, "=")
		f, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil {
			return fmt.Errorf("%q is not KEY=NUMBER", kv)
		}
		ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Value: f})
	}
	return alterQuota(q, ops, stdout)
}

func quotaRemove(args []string, stdout, stderr io.Writer) error {
	q, pos, err := parseQuotaCommand("sluice quota remove", "sluice quota remove "+
		"[--user NAME] [--client-id NAME] KEY...", args, stderr, false)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return errors.New("missing KEY (e.g. producer_byte_rate)")
	}
	var ops []kadm.AlterClientQuotaOp
	for _, k := range pos {
		ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Remove: true})
	}
	return alterQuota(q, ops, stdout)
}

func alterQuota(q *quotaFlags, ops []kadm.AlterClientQuotaOp, stdout io.Writer) error {
	e := q.entity()
	return withAdmin(q.cf, 1, func(ctx context.Context, adm *kadm.Client) error {
		res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: e,
			Ops: ops}})
		if err != nil {
			return friendly(err, "", "")
		}
		if len(res) != 1 {
			return fmt.Errorf("the broker answered %d results for one entity", len(res))
		}
		if res[0].Err != nil {
			if res[0].ErrMessage != "" {
				return fmt.Errorf("%s: %s", e, res[0].ErrMessage)
			}
			return fmt.Errorf("%s: %w", e, res[0].Err)
		}
		fmt.Fprintf(stdout, "updated quotas of %s\n", e)
		return nil
	})
}

func quotaList(args []string, stdout, stderr io.Writer) error {
	q, _, err := parseQuotaCommand("sluice quota list", "sluice quota list "+
		"[--user NAME] [--client-id NAME]", args, stderr, true)
	if err != nil {
		return err
	}
	var comps []kadm.DescribeClientQuotaComponent
	for _, c := range q.entity() {
		dc := kadm.DescribeClientQuotaComponent{Type: c.Type, MatchName: c.Name}
		if c.Name == nil {
			dc.MatchType = 1 // the default
		}
		comps = append(comps, dc)
	}
	return withAdmin(q.cf, 1, func(ctx context.Context, adm *kadm.Client) error {
		qs, err := adm.DescribeClientQuotas(ctx, false, comps)
		if err != nil {
			var ke *kadm.ErrAndMessage
			if errors.As(err, &ke) && errors.Is(ke.Err, kerr.UnsupportedVersion) {
				return fmt.Errorf("describe quotas: %s", ke.ErrMessage)
			}
			return friendly(err, "", "")
		}
		if len(qs) == 0 {
			fmt.Fprintln(stdout, "no client quotas")
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ENTITY\tQUOTAS")
		for _, dq := range qs {
			var vals []string
			for _, v := range dq.Values {
				vals = append(vals, v.Key+"="+strconv.FormatFloat(v.Value, 'f', -1, 64))
			}
			fmt.Fprintf(tw, "%s\t%s\n", entityString(dq.Entity), strings.Join(vals, " "))
		}
		return tw.Flush()
	})
}

// entityString prints an entity as user=alice,client-id=<default>.
func entityString(e kadm.ClientQuotaEntity) string {
	parts := make([]string, len(e))
	for i, c := range e {
		name := "<default>"
		if c.Name != nil {
			name = *c.Name
		}
		parts[i] = c.Type + "=" + name
	}
	return strings.Join(parts, ",")
}
