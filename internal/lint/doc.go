// Package lint holds Sluice's repository rules as ordinary Go code, run by this
// package's tests as part of `make test`:
//
//   - core/ stays pure (CheckPurity): no package that reaches the operating system,
//     the network, locks, atomics or global randomness, no wall-clock reads, sleeps or
//     timers from "time", and no `go` statements. Time, randomness and I/O reach the
//     core as inputs, which is what lets the simulator replay a seed exactly.
//   - every package directory has a doc.go carrying the package comment (CheckDocs);
//     a command (package main) may keep that comment in its main file instead.
//   - every Go file is gofmt-clean (CheckFormatted).
//
// The checks walk syntax trees (go/parser, go/ast), not text, so comments and strings
// that mention a forbidden name do not trip them, and renamed imports do not slip by.
package lint
