// Package fuzz holds whole-system fuzzers. Package-level targets (batch validation,
// frame decoding, log recovery) live next to their code; the targets here drive the
// broker actor as a whole with arbitrary client input and check that it never panics
// and answers every request exactly once.
package fuzz
