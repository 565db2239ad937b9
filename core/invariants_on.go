//go:build invariants

package core

// Expensive: see invariants_off.go.
const Expensive = true
