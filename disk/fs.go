package disk

import "fmt"

// FS is the small filesystem surface the storage layer needs. Paths are slash
// separated. Implementations: OSFS (real files) and MemFS (in memory, crashable).
//
// Durability contract, which every implementation keeps: bytes written to a File are
// durable once File.Sync returns nil; creating, removing and renaming a file are durable
// when the call returns (OSFS fsyncs the parent directory, MemFS models directory
// operations as immediately durable), except Mkdir and CreateUnsynced, durable only
// after SyncEntry. FileCache, which closes and reopens files behind
// the caller's back, keeps it by fsyncing a changed file before closing it.
type FS interface {
	// Create creates the file, or truncates it if it exists, and opens it for reading and
	// appending.
	Create(path string) (File, error)
	// OpenFile opens an existing file for reading and appending.
	OpenFile(path string) (File, error)
	// Open opens an existing file read-only; Write, Truncate and Sync fail on it.
	Open(path string) (File, error)
	// Remove deletes a file or an empty directory.
	Remove(path string) error
	// Rename atomically replaces newpath with oldpath.
	Rename(oldpath, newpath string) error
	// MkdirAll creates a directory and any missing parents; durable on return, also when
	// the directory existed already.
	MkdirAll(path string) error
	// Mkdir creates one directory whose parent exists (fs.ErrExist if path exists). It is
	// the one directory operation not durable on return: a crash before SyncEntry(path)
	// returned nil may lose the directory and everything created in it.
	Mkdir(path string) error
	// CreateUnsynced is Create in a directory made by Mkdir whose entry is not durable
	// yet: the new file's entry becomes durable with the directory, at SyncEntry.
	CreateUnsynced(path string) (File, error)
	// SyncEntry makes the directory made by Mkdir durable: its entries and its own
	// entry in its parent (OSFS fsyncs the directory, then its parent).
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
