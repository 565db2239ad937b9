package disk

import (
	"path"
	"sort"
)

// Faults of data at rest, for the simulator: bit rot of synced bytes, and stale data
// surfacing in place of unsynced writes at a crash. Both keep MemFS deterministic: the
// caller chooses (rot) or draws from its own CrashRand (stale writes), and files are
// visited in path order.

// DurableFile is a file's path and the length of its durable content.
type DurableFile struct {
	Path    string
	Durable int64
}

// DurableFiles lists, in path order, the files under dir (recursively) holding durable
// bytes, with how many: the bytes a power loss cannot take back, which are the ones
// that can rot at rest.
func (m *MemFS) DurableFiles(dir string) []DurableFile {
	dir = path.Clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []DurableFile
	for p, n := range m.files {
		if !underDir(p, dir) {
			continue
		}
		if d := n.durableLen(); d > 0 {
			out = append(out, DurableFile{Path: p, Durable: int64(d)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func underDir(p, dir string) bool {
	return dir == "." || dir == "/" || len(p) > len(dir) && p[:len(dir)] == dir && p[len(dir)] == '/'
}

// durableLen is how many bytes of the file a crash keeps for sure.
func (n *memNode) durableLen() int {
	if n.diverged {
		return len(n.durCopy)
	}
	return n.durLen
}

// ReadDurable returns a copy of the durable content of a file (what a power loss would
// leave, before any torn tail).
func (m *MemFS) ReadDurable(p string) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.files[path.Clean(p)]
	if !ok {
		return nil, false
	}
	if n.diverged {
		return append([]byte(nil), n.durCopy...), true
	}
	return append([]byte(nil), n.data[:n.durLen]...), true
}

// Rot flips the bits of mask in the durable byte at off of file p, as bit rot on the
// medium does: the page cache, if it still holds the page, is assumed evicted, so every
// later read and every crash sees the flipped byte. It reports whether the byte exists.
func (m *MemFS) Rot(p string, off int64, mask byte) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.files[path.Clean(p)]
	if !ok || off < 0 || off >= int64(n.durableLen()) || mask == 0 {
		return false
	}
	if n.diverged {
		n.durCopy[off] ^= mask
		if off < int64(len(n.data)) && off < int64(n.truncLow) {
			n.data[off] ^= mask // the same block, still in the file
		}
		return true
	}
	n.data[off] ^= mask
	return true
}

// StaleWrites makes the next Crash show stale data in place of unsynced writes: for each
// file with bytes appended since its last sync, with probability chance (drawn from r,
// in path order), the bytes past the durable content are replaced by a copy of the
// file's own beginning. It models a lost or misdirected write whose size update
// survived (ext4's data=writeback, a drive acknowledging a write it then places
// elsewhere): the file's tail shows older blocks — well-framed, checksummed data
// belonging to other offsets. Crash then keeps a random prefix of it as of any tail.
// Only the content the crash rebuilds from changes: the process reading the file now
// is about to die with the crash. It returns how many files it changed.
func (m *MemFS) StaleWrites(r CrashRand, chance float64) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	paths := make([]string, 0, len(m.files))
	for p := range m.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	changed := 0
	for _, p := range paths {
		n := m.files[p]
		if n.diverged || len(n.data) <= n.durLen || n.durLen == 0 {
			continue
		}
		if float64(r.Intn(1<<20)) >= chance*(1<<20) {
			continue
		}
		tail := n.data[n.durLen:]
		for i := range tail {
			tail[i] = n.data[i%n.durLen]
		}
		changed++
	}
	return changed
}
