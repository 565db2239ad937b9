// Command sluice is Sluice's one binary: the node, the simulator and the client tools.
//
//	sluice node     run a node
//	sluice sim      run simulator seeds
//	sluice topic    create, list, describe, alter and delete topics
//	sluice produce  produce lines from stdin
//	sluice consume  consume records to stdout
//	sluice group    list, describe (with lag), delete and reset consumer groups
//
// Each subcommand lives in its own file and registers itself in init with register.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/sluicemq/sluice/core/mutant"
)

// command is one subcommand. run gets the arguments after the subcommand's name and
// returns the process exit status.
type command struct {
	summary string
	run     func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

var commands = map[string]command{}

func register(name string, c command) {
	if _, dup := commands[name]; dup {
		panic("sluice: command registered twice: " + name)
	}
	commands[name] = c
}

func main() {
	// A planted bug for mutation testing (core/mutant): only the sluice_mutants build
	// reads it; in every real build the hooks are compiled away.
	mutant.Name = os.Getenv(mutant.EnvVar)
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || isHelp(args[0]) {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "sluice: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	return c.run(args[1:], stdin, stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: sluice <command> [flags]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'sluice <command> -h' for a command's flags.")
}

// isHelp reports the arguments that ask a command with actions for its usage.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}
