//go:build unix

package runtime

import (
	"fmt"
	"syscall"
)

// raiseFDLimit raises the soft RLIMIT_NOFILE to the hard limit and returns both.
func raiseFDLimit() (soft, hard uint64, err error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, fmt.Errorf("read the open-file limit: %w", err)
	}
	if rl.Cur < rl.Max {
		raised := rl
		raised.Cur = rl.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			rl = raised
		}
	}
	return uint64(rl.Cur), uint64(rl.Max), nil
}
