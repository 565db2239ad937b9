//go:build !sluice_mutant_ack_before_fsync

package broker

// mutantAckBeforeFsync is false in every real build. The build tag
// sluice_mutant_ack_before_fsync turns it on to make a deliberately broken broker that
// answers acks=all as soon as a batch is written, before its fsync; the simulator must
// catch that build (e2e/mutant_test.go). See docs/simulation.md.
const mutantAckBeforeFsync = false
