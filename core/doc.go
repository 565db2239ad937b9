// Package core holds the types shared by Sluice's actors: time, partition names and the
// small vocabulary every actor and driver speaks.
//
// Everything under core/ is a pure, single-threaded state machine. Nothing here reads a
// clock, starts a goroutine, takes a lock, touches the operating system or reads global
// randomness; a repository lint test enforces it (see lint_test.go at the repository
// root). Drivers (runtime/ in production, sim/ in the simulator) feed actors their inputs
// together with the current time and carry out the effects the actors ask for. The
// contract and its ordering rules are written down in docs/actors.md.
package core
