package disk

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// VolatileMarks is a small set of names that lives exactly as long as the machine's page
// cache: a process restart keeps it, a reboot empties it. A failed fsync's hazard has
// that lifetime too (taint.go): pages the kernel marked clean without writing them read
// back fine until the machine reboots. The taint mark goes here as well as into the
// state store, because a disk that fails fsyncs often fails the state store's writes
// too; tmpfs does not share the data disk's faults.
type VolatileMarks interface {
	Mark(name string) error
	Marked(name string) (bool, error)
	Clear(name string) error
	// List returns the marked names with the prefix, sorted.
	List(prefix string) ([]string, error)
}

// LogOptions are the optional parts of a partition log's environment.
type LogOptions struct {
	// Volatile keeps taint marks across process restarts when the state store cannot
	// (nil: the state store alone).
	Volatile VolatileMarks
}

// DirMarks keeps marks as files in a directory on tmpfs (/dev/shm on Linux), each
// holding its name; the names are also kept in memory, loaded when it is made.
type DirMarks struct {
	dir   string
	mu    sync.Mutex
	names map[string]bool
}

// NewDirMarks makes the marks directory of a data directory under root (normally
// /dev/shm): one directory per data directory, named by a hash of its absolute path,
// so that two nodes on one machine do not share marks.
func NewDirMarks(root, dataDir string) (*DirMarks, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(abs))
	dir := filepath.Join(root, "sluice-"+hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("volatile marks in %s: %w", root, err)
	}
	d := &DirMarks{dir: dir, names: map[string]bool{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("volatile marks in %s: %w", root, err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("volatile marks in %s: %w", root, err)
		}
		d.names[string(b)] = true
	}
	return d, nil
}

// Dir is where the marks live.
func (d *DirMarks) Dir() string { return d.dir }

func (d *DirMarks) path(name string) string {
	sum := sha256.Sum256([]byte(name))
	return filepath.Join(d.dir, hex.EncodeToString(sum[:16]))
}

func (d *DirMarks) Mark(name string) error {
	if err := os.WriteFile(d.path(name), []byte(name), 0o600); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.names[name] = true
	return nil
}

func (d *DirMarks) Marked(name string) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.names[name], nil
}

func (d *DirMarks) Clear(name string) error {
	err := os.Remove(d.path(name))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.names, name)
	return nil
}

func (d *DirMarks) List(prefix string) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return listNames(d.names, prefix), nil
}

func listNames(names map[string]bool, prefix string) []string {
	var out []string
	for n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// MemMarks is VolatileMarks for tests and the simulator: the simulator keeps one per
// node across process restarts and calls Reboot at a power loss.
type MemMarks struct {
	mu    sync.Mutex
	names map[string]bool
}

func NewMemMarks() *MemMarks { return &MemMarks{names: map[string]bool{}} }

func (m *MemMarks) Mark(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.names[name] = true
	return nil
}

func (m *MemMarks) Marked(name string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.names[name], nil
}

func (m *MemMarks) Clear(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.names, name)
	return nil
}

func (m *MemMarks) List(prefix string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return listNames(m.names, prefix), nil
}

// Reboot empties the marks, as a reboot empties tmpfs.
func (m *MemMarks) Reboot() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.names)
}
