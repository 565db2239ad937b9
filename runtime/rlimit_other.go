//go:build !unix

package runtime

// raiseFDLimit: platforms without RLIMIT_NOFILE get a budget for a generous limit.
func raiseFDLimit() (soft, hard uint64, err error) { return 1 << 16, 1 << 16, nil }
