package disk

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// MinStateFreeBytes is the free space the node state store asks for on top of what
// replaying its write-ahead log needs, before it opens: room for a new log, a manifest
// edit and the first writes of a start.
const MinStateFreeBytes = 1 << 20

// NoSpaceError says a directory's filesystem has too little free space for a node to
// start (or that a write at start met ENOSPC). It unwraps to syscall.ENOSPC.
type NoSpaceError struct {
	Path string // the directory that needs the space
	Free uint64 // bytes free to unprivileged users on its filesystem
	Need uint64 // bytes needed
}

func (e *NoSpaceError) Error() string {
	return fmt.Sprintf("disk full: %s needs at least %s free to start and its filesystem "+
		"has %s; free some space there or move the data directory", e.Path,
		byteSize(e.Need), byteSize(e.Free))
}

// Unwrap makes errors.Is(err, syscall.ENOSPC) hold.
func (e *NoSpaceError) Unwrap() error { return syscall.ENOSPC }

// DirInUseError says another process holds a directory's lock.
type DirInUseError struct {
	Dir  string
	Lock string // the lock file
	Err  error
}

func (e *DirInUseError) Error() string {
	return fmt.Sprintf("data directory %s is in use by another process (it holds the lock "+
		"on %s): stop that node or give this one another data directory", e.Dir, e.Lock)
}

func (e *DirInUseError) Unwrap() error { return e.Err }

// freeBytes is the space available to unprivileged users on dir's filesystem.
func freeBytes(dir string) (uint64, error) {
	_, free, err := Space(dir)
	return free, err
}

// Space is the size of dir's filesystem and the bytes on it available to unprivileged
// users: what the node's writes can still use (DescribeLogDirs' TotalBytes and
// UsableBytes).
func Space(dir string) (total, usable uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return st.Blocks * uint64(st.Bsize), st.Bavail * uint64(st.Bsize), nil
}

// stateNeed is the free space opening the pebble store in dir needs: its write-ahead
// logs are replayed into a memtable and flushed to a table at open, which takes about
// their size again, plus MinStateFreeBytes.
func stateNeed(dir string) uint64 {
	var wal uint64
	entries, _ := os.ReadDir(dir) // a missing dir needs no replay
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Size() > 0 {
			wal += uint64(fi.Size())
		}
	}
	return 2*wal + MinStateFreeBytes
}

// checkStateSpace refuses to open the state store in dir on a filesystem without the
// space its open needs, instead of letting pebble retry a failing flush forever.
func checkStateSpace(dir string) error {
	need := stateNeed(dir)
	free, err := freeBytes(existingParent(dir))
	if err != nil {
		return nil // cannot tell: the open's own ENOSPC handling still applies
	}
	if free < need {
		return &NoSpaceError{Path: dir, Free: free, Need: need}
	}
	return nil
}

// existingParent is dir or its nearest existing ancestor (statfs needs a real path).
func existingParent(dir string) string {
	for {
		if _, err := os.Stat(dir); err == nil || !errors.Is(err, os.ErrNotExist) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		dir = parent
	}
}

// byteSize prints n in the largest binary unit that keeps it at or above 1.
func byteSize(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
