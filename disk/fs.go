package disk

import "fmt"

// FS is the small filesystem surface the storage layer needs. Paths are slash
// separated. Implementations: OSFS (real files) and MemFS (in memory, crashable).
//
// Durability contract, which every implementation keeps, and which is the POSIX one:
// bytes written to a File are durable once a File.Sync that began after the write
// returns nil. Creating, removing and renaming a file, and Mkdir, are durable only once
// an fsync of the directory holding the entry (SyncDir, SyncEntry) that began after
// them returns nil; a crash may undo any of them that were not (a created file vanishes,
// a removed or renamed one comes back under its old name with its durable content).
// MkdirAll is the exception: durable on return. FileCache, which closes and reopens
// files behind the caller's back, keeps it by fsyncing a changed file before closing it.
type FS interface {
	// Create creates the file, or truncates it if it exists, and opens it for reading and
	// appending. The new entry is durable after SyncDir of its directory.
	Create(path string) (File, error)
	// OpenFile opens an existing file for reading and appending.
	OpenFile(path string) (File, error)
	// Open opens an existing file read-only; Write, Truncate and Sync fail on it.
	Open(path string) (File, error)
	// Remove deletes a file or an empty directory; durable after SyncDir of the parent.
	Remove(path string) error
	// Rename atomically replaces newpath with oldpath; durable after SyncDir of both
	// directories.
	Rename(oldpath, newpath string) error
	// MkdirAll creates a directory and any missing parents; durable on return, also when
	// the directory existed already (its ancestors are synced; its own entries are not).
	MkdirAll(path string) error
	// Mkdir creates one directory whose parent exists (fs.ErrExist if path exists). A
	// crash before its parent is synced (SyncEntry(path)) may lose the directory and
	// everything created in it.
	Mkdir(path string) error
	// SyncDir fsyncs a directory: the creations, removals and renames of its entries
	// made before it began become durable.
	SyncDir(dir string) error
	// SyncEntry fsyncs a directory, then its parent: its entries and its own entry in
	// its parent become durable (a directory made by Mkdir).
	SyncEntry(dir string) error
	// ReadDir lists the names (not paths) of a directory's entries, sorted.
	ReadDir(path string) ([]string, error)
	// Stat returns the size of a file.
	Stat(path string) (int64, error)
}

// File is an open file. Writes always append at the end.
//
// ReadAt and Sync may be called concurrently with every other method; Write, Truncate
// and Size are called by one goroutine at a time.
type File interface {
	ReadAt(p []byte, off int64) (int, error)
	// Write appends p. On error some prefix of p may have been written; the caller
	// truncates back to the size it knew.
	Write(p []byte) (int, error)
	Sync() error
	Truncate(size int64) error
	Close() error
	// Size is the file's current size, including unsynced bytes.
	Size() int64
}

// Op names a filesystem operation, for fault injection (MemFS.SetFault).
type Op uint8

// The operations a fault function can fail.
const (
	OpCreate Op = iota + 1
	OpOpen
	OpRead
	OpWrite
	OpSync
	OpTruncate
	OpRemove
	OpRename
	OpMkdir
	OpReadDir
	OpStat
)

func (o Op) String() string {
	switch o {
	case OpCreate:
		return "create"
	case OpOpen:
		return "open"
	case OpRead:
		return "read"
	case OpWrite:
		return "write"
	case OpSync:
		return "sync"
	case OpTruncate:
		return "truncate"
	case OpRemove:
		return "remove"
	case OpRename:
		return "rename"
	case OpMkdir:
		return "mkdir"
	case OpReadDir:
		return "readdir"
	case OpStat:
		return "stat"
	default:
		return fmt.Sprintf("op(%d)", uint8(o))
	}
}
