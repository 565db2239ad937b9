//go:build sluice_mutant_ack_before_fsync

package broker

// mutantAckBeforeFsync: this is the deliberately broken build. Never ship it.
const mutantAckBeforeFsync = true
