package main

// `sluice acl`: add, list and remove ACLs (CreateAcls, DescribeAcls, DeleteAcls through
// kadm), in the manner of kafka-acls.sh. A resource is --topic, --group, --cluster or
// --transactional-id; names are literal unless --resource-pattern-type prefixed.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/acl"
)

func init() {
	register("acl", command{
		summary: "add, list and remove ACLs (who may do what to which topic or group)",
		run:     runACL,
	})
}

var aclActions = map[string]topicAction{
	"add":    {"allow or deny principals operations on a resource", aclAdd},
	"list":   {"list the ACLs (all, or those a filter matches)", aclList},
	"remove": {"remove the ACLs a filter matches", aclRemove},
}

func runACL(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || isHelp(args[0]) {
		fmt.Fprintln(stderr, "usage: sluice acl <action> [flags]\n\nactions:")
		for _, name := range sortedKeys(aclActions) {
			fmt.Fprintf(stderr, "  %-8s %s\n", name, aclActions[name].summary)
		}
		fmt.Fprintln(stderr, "\noperations: all, read, write, create, delete, alter, "+
			"describe, cluster-action,\n  describe-configs, alter-configs, idempotent-write"+
			"\nThe node keeps and checks ACLs only with authorizer.class.name set "+
			"(docs/security.md)."+
			"\nRun 'sluice acl <action> -h' for an action's flags.")
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	a, ok := aclActions[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "sluice acl: unknown action %q\n", args[0])
		return 2
	}
	return exitStatus("sluice acl "+args[0], a.run(args[1:], stdout, stderr), stderr)
}

// aclFlags are the client flags, the resource and the binding's (or filter's) parts.
type aclFlags struct {
	cf                           clientFlags
	topics, groups, txns         []string
	cluster                      bool
	pattern                      string
	allow, deny, principals, ops []string
	host, permission             string
}

func (f *aclFlags) register(fs *flag.FlagSet, add bool) {
	f.cf.register(fs)
	multi := func(dst *[]string) func(string) error {
		return func(s string) error { *dst = append(*dst, s); return nil }
	}
	fs.Func("topic", "a topic (repeatable; * is every topic)", multi(&f.topics))
	fs.Func("group", "a consumer group (repeatable; * is every group)", multi(&f.groups))
	fs.Func("transactional-id", "a transactional id (repeatable)", multi(&f.txns))
	fs.BoolVar(&f.cluster, "cluster", false, "the cluster (ACLs on cluster operations)")
	fs.Func("operation", "an operation (repeatable)", multi(&f.ops))
	if add {
		fs.StringVar(&f.pattern, "resource-pattern-type", "literal",
			"literal or prefixed: a prefixed name covers every resource it starts")
		fs.Func("allow-principal", "a principal to allow, User:name (repeatable)",
			multi(&f.allow))
		fs.Func("deny-principal", "a principal to deny, User:name (repeatable)",
			multi(&f.deny))
		fs.StringVar(&f.host, "host", "*", "the client address the ACL applies to")
		return
	}
	fs.StringVar(&f.pattern, "resource-pattern-type", "any", "any, match (the ACLs that "+
		"apply to the named resource: literal, * and prefixes), literal or prefixed")
	fs.Func("principal", "only the ACLs of this principal (repeatable)", multi(&f.principals))
	fs.StringVar(&f.permission, "permission", "any", "allow, deny or any")
	fs.StringVar(&f.host, "host", "", "only the ACLs of this host")
}

// builder is the kadm builder of the flags: bindings to create, or a filter.
func (f *aclFlags) builder(add bool) (*kadm.ACLBuilder, error) {
	pat, err := acl.ParsePatternType(f.pattern)
	if err != nil {
		return nil, err
	}
	var ops []kadm.ACLOperation
	for _, s := range f.ops {
		op, err := acl.ParseOperation(s)
		if err != nil {
			return nil, err
		}
		ops = append(ops, kmsg.ACLOperation(op))
	}
	b := kadm.NewACLs().ResourcePatternType(kmsg.ACLResourcePatternType(pat))
	b.MaybeTopics(f.topics...).MaybeGroups(f.groups...).MaybeTransactionalIDs(f.txns...)
	b.MaybeClusters(f.cluster)
	if add {
		b.MaybeOperations(ops...)
		hosts := []string{f.host}
		if len(f.allow) > 0 {
			b.Allow(f.allow...).AllowHosts(hosts...)
		}
		if len(f.deny) > 0 {
			b.Deny(f.deny...).DenyHosts(hosts...)
		}
		return b, nil
	}
	if len(f.topics)+len(f.groups)+len(f.txns) == 0 && !f.cluster {
		b.AnyResource()
	}
	b.Operations(ops...)
	var hosts []string
	if f.host != "" {
		hosts = []string{f.host}
	}
	perm, err := acl.ParsePermission(f.permission)
	if err != nil {
		return nil, err
	}
	if perm == acl.Allow || perm == acl.PermissionAny {
		b.Allow(f.principals...).AllowHosts(hosts...)
	}
	if perm == acl.Deny || perm == acl.PermissionAny {
		b.Deny(f.principals...).DenyHosts(hosts...)
	}
	return b, nil
}

func parseACLCommand(name, synopsis string, args []string, stderr io.Writer,
	add bool) (*aclFlags, *kadm.ACLBuilder, error) {
	f := &aclFlags{}
	fs := newFlagSet(name, synopsis, stderr)
	f.register(fs, add)
	pos, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, errUsage
	}
	if len(pos) > 0 {
		return nil, nil, usageErr(fs, "unexpected argument %q", pos[0])
	}
	resources := len(f.topics) + len(f.groups) + len(f.txns)
	if f.cluster {
		resources++
	}
	switch {
	case add && resources == 0:
		return nil, nil, usageErr(fs, "name a resource: --topic, --group, --cluster or "+
			"--transactional-id")
	case add && len(f.allow)+len(f.deny) == 0:
		return nil, nil, usageErr(fs, "name a principal: --allow-principal or --deny-principal")
	case add && len(f.ops) == 0:
		return nil, nil, usageErr(fs, "name an operation: --operation")
	case !add && name == "sluice acl remove" && resources == 0 && len(f.principals) == 0:
		return nil, nil, usageErr(fs, "name a resource or a --principal")
	}
	b, err := f.builder(add)
	if err != nil {
		return nil, nil, usageErr(fs, "%v", err)
	}
	return f, b, checkClient(fs, f.cf)
}

func aclAdd(args []string, stdout, stderr io.Writer) error {
	f, b, err := parseACLCommand("sluice acl add", "sluice acl add (--allow-principal "+
		"P | --deny-principal P)... --operation OP... (--topic T | --group G | --cluster | "+
		"--transactional-id X)... [--resource-pattern-type literal|prefixed] [--host H]",
		args, stderr, true)
	if err != nil {
		return err
	}
	return withAdmin(f.cf, 1, func(ctx context.Context, adm *kadm.Client) error {
		res, err := adm.CreateACLs(ctx, b)
		if err != nil {
			return friendly(err, "", "")
		}
		var errs []string
		for _, r := range res {
			if r.Err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v %s", aclLine(r.Principal, r.Host,
					r.Type, r.Name, r.Pattern, r.Operation, r.Permission), r.Err, r.ErrMessage))
				continue
			}
			fmt.Fprintf(stdout, "added %s\n", aclLine(r.Principal, r.Host, r.Type, r.Name,
				r.Pattern, r.Operation, r.Permission))
		}
		if len(errs) > 0 {
			return errors.New(strings.Join(errs, "\n"))
		}
		return nil
	})
}

func aclList(args []string, stdout, stderr io.Writer) error {
	f, b, err := parseACLCommand("sluice acl list", "sluice acl list [--topic T | --group G "+
		"| --cluster | --transactional-id X] [--principal P] [--operation OP] "+
		"[--permission allow|deny] [--resource-pattern-type any|match|literal|prefixed]",
		args, stderr, false)
	if err != nil {
		return err
	}
	return withAdmin(f.cf, 1, func(ctx context.Context, adm *kadm.Client) error {
		res, err := adm.DescribeACLs(ctx, b)
		if err != nil {
			return friendly(err, "", "")
		}
		seen := map[string]bool{}
		var lines []string
		for _, r := range res {
			if r.Err != nil {
				return fmt.Errorf("%v %s", r.Err, r.ErrMessage)
			}
			for _, d := range r.Described {
				l := aclRow(d.Principal, d.Host, d.Type, d.Name, d.Pattern, d.Operation,
					d.Permission)
				if !seen[l] {
					seen[l] = true
					lines = append(lines, l)
				}
			}
		}
		if len(lines) == 0 {
			fmt.Fprintln(stdout, "no ACLs")
			return nil
		}
		sort.Strings(lines)
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "RESOURCE\tPATTERN\tPRINCIPAL\tHOST\tOPERATION\tPERMISSION")
		for _, l := range lines {
			fmt.Fprintln(tw, l)
		}
		return tw.Flush()
	})
}

func aclRemove(args []string, stdout, stderr io.Writer) error {
	f, b, err := parseACLCommand("sluice acl remove", "sluice acl remove [--topic T | "+
		"--group G | --cluster | --transactional-id X] [--principal P] [--operation OP] "+
		"[--permission allow|deny] [--resource-pattern-type any|match|literal|prefixed]",
		args, stderr, false)
	if err != nil {
		return err
	}
	return withAdmin(f.cf, 1, func(ctx context.Context, adm *kadm.Client) error {
		res, err := adm.DeleteACLs(ctx, b)
		if err != nil {
			return friendly(err, "", "")
		}
		n := 0
		for _, r := range res {
			if r.Err != nil {
				return fmt.Errorf("%v %s", r.Err, r.ErrMessage)
			}
			for _, d := range r.Deleted {
				if d.Err != nil {
					return fmt.Errorf("%v %s", d.Err, d.ErrMessage)
				}
				n++
				fmt.Fprintf(stdout, "removed %s\n", aclLine(d.Principal, d.Host, d.Type,
					d.Name, d.Pattern, d.Operation, d.Permission))
			}
		}
		if n == 0 {
			fmt.Fprintln(stdout, "no ACL matched")
		}
		return nil
	})
}

// aclLine prints one binding: "ALLOW User:bob from * READ on TOPIC orders (LITERAL)".
func aclLine(principal, host string, t kmsg.ACLResourceType, name string,
	p kmsg.ACLResourcePatternType, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) string {
	return fmt.Sprintf("%s %s from %s %s on %s %s (%s)", acl.Permission(perm), principal,
		host, acl.Operation(op), acl.ResourceType(t), name, acl.PatternType(p))
}

// aclRow is one binding as a tab-separated row of the list.
func aclRow(principal, host string, t kmsg.ACLResourceType, name string,
	p kmsg.ACLResourcePatternType, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) string {
	return fmt.Sprintf("%s:%s\t%s\t%s\t%s\t%s\t%s", acl.ResourceType(t), name,
		acl.PatternType(p), principal, host, acl.Operation(op), acl.Permission(perm))
}
