// Package benchchart draws the benchmark picture of docs/benchmarks.md: a self-contained
// SVG (no script, no fonts or images fetched) with throughput and one-at-a-time p50/p99
// ack latency, Sluice beside the peers from the same run.
//
// Its input is a run's results file: the FIGURE and CONTEXT lines that `sluice bench`
// and ../shared/bench/peer_bench.sh print, one per figure, as `key=value` fields
// (scripts/bench.sh keeps them in bin/bench-results/). Parse reads such a file into a
// Run; Render draws it. A figure the run lacks (a peer that did not run, or a step
// that failed) is drawn as a line of text saying so, never as an error.
package benchchart
