package main

// `sluice user`: create, delete and list the SCRAM users of the cluster through kadm
// (AlterUserScramCredentials and DescribeUserScramCredentials, KIP-554). The password
// is salted and hashed here, by kadm: it never travels to the broker, which keeps only
// the derived keys (docs/security.md, "SASL").

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
)

// envUserPassword is where `sluice user create` reads the new password when
// --password is not given (before standard input).
const envUserPassword = "SLUICE_USER_PASSWORD"

func init() {
	register("user", command{
		summary: "create, delete and list SCRAM users (SASL credentials)",
		run:     runUser,
	})
}

var userActions = map[string]topicAction{
	"create": {"create a user, or change its password", userCreate},
	"delete": {"delete a user's credentials", userDelete},
	"list":   {"list users and their mechanisms", userList},
}

func runUser(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || isHelp(args[0]) {
		userUsage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	a, ok := userActions[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "sluice user: unknown action %q\n\n", args[0])
		userUsage(stderr)
		return 2
	}
	userStdin = stdin
	return exitStatus("sluice user "+args[0], a.run(args[1:], stdout, stderr), stderr)
}

// userStdin is where `user create` reads a password given neither by flag nor by env.
var userStdin io.Reader = os.Stdin

func userUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: sluice user <action> [flags]\n\nactions:")
	for _, name := range sortedKeys(userActions) {
		fmt.Fprintf(w, "  %-9s %s\n", name, userActions[name].summary)
	}
	fmt.Fprintln(w, "\nRun 'sluice user <action> -h' for an action's flags.")
}

// mechanismsFlag reads --mechanism: SCRAM-SHA-256, SCRAM-SHA-512 or both ("").
func mechanismsFlag(v string) ([]kadm.ScramMechanism, error) {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "", "ALL", "BOTH":
		return []kadm.ScramMechanism{kadm.ScramSha256, kadm.ScramSha512}, nil
	case "SCRAM-SHA-256":
		return []kadm.ScramMechanism{kadm.ScramSha256}, nil
	case "SCRAM-SHA-512":
		return []kadm.ScramMechanism{kadm.ScramSha512}, nil
	}
	return nil, fmt.Errorf("--mechanism: want SCRAM-SHA-256, SCRAM-SHA-512 or all, got %q", v)
}

func userCreate(args []string, stdout, stderr io.Writer) error {
	var cf clientFlags
	var mech, password string
	var iterations int
	fs := newFlagSet("sluice user create", "sluice user create NAME [--mechanism M] "+
		"[--iterations N]", stderr)
	cf.register(fs)
	fs.StringVar(&mech, "mechanism", "all", "SCRAM-SHA-256, SCRAM-SHA-512 or all")
	fs.IntVar(&iterations, "iterations", 8192, "PBKDF2 iterations, 4096..16384")
	fs.StringVar(&password, "password", "", "the password; prefer env "+envUserPassword+
		" or standard input (one line), which the process list does not show")
	pos, err := parseCommand(fs, args, "NAME")
	if err != nil {
		return err
	}
	mechs, err := mechanismsFlag(mech)
	if err != nil {
		return usageErr(fs, "%v", err)
	}
	if iterations < 4096 || iterations > 16384 {
		return usageErr(fs, "--iterations must be 4096..16384, got %d", iterations)
	}
	if err := checkClient(fs, cf); err != nil {
		return err
	}
	if password, err = newPassword(password); err != nil {
		return err
	}
	var ups []kadm.UpsertSCRAM
	for _, m := range mechs {
		ups = append(ups, kadm.UpsertSCRAM{User: pos[0], Mechanism: m,
			Iterations: int32(iterations), Password: password})
	}
	if err := alterUsers(cf, pos[0], nil, ups); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "user %q: %s credentials set (%d iterations)\n", pos[0],
		mechNames(mechs), iterations)
	return nil
}

// newPassword is the password of --password, or of the environment, or the first
// line of standard input.
func newPassword(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if v := os.Getenv(envUserPassword); v != "" {
		return v, nil
	}
	line, err := bufio.NewReader(userStdin).ReadString('\n')
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("read the password from standard input: %w", err)
		}
		return "", errors.New("no password: give --password, " + envUserPassword +
			", or one line on standard input")
	}
	return line, nil
}

func userDelete(args []string, stdout, stderr io.Writer) error {
	var cf clientFlags
	var mech string
	fs := newFlagSet("sluice user delete", "sluice user delete NAME [--mechanism M]", stderr)
	cf.register(fs)
	fs.StringVar(&mech, "mechanism", "all",
		"SCRAM-SHA-256, SCRAM-SHA-512 or all (those the user has)")
	pos, err := parseCommand(fs, args, "NAME")
	if err != nil {
		return err
	}
	mechs, err := mechanismsFlag(mech)
	if err != nil {
		return usageErr(fs, "%v", err)
	}
	if err := checkClient(fs, cf); err != nil {
		return err
	}
	if len(mechs) > 1 { // all: only those the user has, or deleting one fails
		if mechs, err = userMechanisms(cf, pos[0]); err != nil {
			return err
		}
	}
	var dels []kadm.DeleteSCRAM
	for _, m := range mechs {
		dels = append(dels, kadm.DeleteSCRAM{User: pos[0], Mechanism: m})
	}
	if err := alterUsers(cf, pos[0], dels, nil); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "user %q: %s credentials deleted\n", pos[0], mechNames(mechs))
	return nil
}

// userMechanisms lists the mechanisms a user has credentials for; an error when none.
func userMechanisms(cf clientFlags, user string) ([]kadm.ScramMechanism, error) {
	var out []kadm.ScramMechanism
	err := withUserAdmin(cf, func(ctx context.Context, adm *kadm.Client) error {
		described, err := adm.DescribeUserSCRAMs(ctx, user)
		if err != nil {
			return err
		}
		d := described[user]
		if d.Err != nil {
			return fmt.Errorf("user %q: %w %s", user, d.Err, d.ErrMessage)
		}
		for _, ci := range d.CredInfos {
			out = append(out, ci.Mechanism)
		}
		return nil
	})
	return out, err
}

func userList(args []string, stdout, stderr io.Writer) error {
	var cf clientFlags
	fs := newFlagSet("sluice user list", "sluice user list", stderr)
	cf.register(fs)
	if _, err := parseCommand(fs, args); err != nil {
		return err
	}
	if err := checkClient(fs, cf); err != nil {
		return err
	}
	return withUserAdmin(cf, func(ctx context.Context, adm *kadm.Client) error {
		described, err := adm.DescribeUserSCRAMs(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "USER\tMECHANISM\tITERATIONS")
		for _, d := range described.Sorted() {
			for _, ci := range d.CredInfos {
				fmt.Fprintf(tw, "%s\t%s\t%d\n", d.User, ci.Mechanism, ci.Iterations)
			}
		}
		return tw.Flush()
	})
}

// alterUsers sends one AlterUserScramCredentials for a user and words its error.
func alterUsers(cf clientFlags, user string, dels []kadm.DeleteSCRAM,
	ups []kadm.UpsertSCRAM) error {
	return withUserAdmin(cf, func(ctx context.Context, adm *kadm.Client) error {
		altered, err := adm.AlterUserSCRAMs(ctx, dels, ups)
		if err != nil {
			return err
		}
		if a := altered[user]; a.Err != nil {
			return fmt.Errorf("user %q: %w %s", user, a.Err, a.ErrMessage)
		}
		return nil
	})
}

func withUserAdmin(cf clientFlags, f func(ctx context.Context, adm *kadm.Client) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), cf.timeout*2)
	defer cancel()
	adm, done, err := admin(ctx, cf)
	if err != nil {
		return err
	}
	defer done()
	return f(ctx, adm)
}

func mechNames(ms []kadm.ScramMechanism) string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.String()
	}
	return strings.Join(names, ", ")
}
