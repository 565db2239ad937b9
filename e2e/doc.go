// Package e2e runs the real sluice binary as a separate process and drives it the way
// a user would: kcat and franz-go clients over TCP, kill -9 in the middle of a
// produce, restarts on the same data directory. Every test is bounded in time,
// listens on 127.0.0.1 only, and kills what it started.
package e2e
