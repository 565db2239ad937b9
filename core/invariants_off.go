//go:build !invariants

package core

// Expensive is true in builds with the invariants tag (tests, the simulator): actors
// then also run the checks that cost real work, such as reading back what they just
// wrote. Production builds leave them out.
const Expensive = false
