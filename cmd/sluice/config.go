package main

// `sluice config list`: every setting a node reads, from the one table (settings/).

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/sluicemq/sluice/settings"
)

func init() {
	register("config", command{
		summary: "list every setting with its type, default, range and meaning",
		run:     runConfig,
	})
}

func runConfig(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || isHelp(args[0]) {
		fmt.Fprintln(stderr, "usage: sluice config list [--markdown]\n\n"+
			"  list   every setting a node reads (config file key=value), with its type,\n"+
			"         default, range and meaning; --markdown prints docs/configuration.md")
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] != "list" {
		fmt.Fprintf(stderr, "sluice config: unknown action %q (want list)\n", args[0])
		return 2
	}
	fs := newFlagSet("sluice config list", "sluice config list [--markdown]", stderr)
	markdown := fs.Bool("markdown", false, "print the table as docs/configuration.md")
	if _, err := parseCommand(fs, args[1:]); err != nil {
		return 2
	}
	if *markdown {
		fmt.Fprint(stdout, settings.Markdown())
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SETTING\tSCOPE\tTYPE\tDEFAULT\tRANGE\tMEANING")
	for _, s := range settings.All() {
		name := s.Name
		if s.Alias != "" {
			name += " (" + s.Alias + ")"
		}
		def := s.Default
		if def == "" {
			def = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, s.Scope, s.Kind, def, s.Range(),
			s.Doc)
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintf(stderr, "sluice config list: %v\n", err)
		return 1
	}
	return 0
}
