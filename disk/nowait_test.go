package disk

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// gateFS holds the first file fsync issued after arm until release, as a slow disk
// holds a sync worker's group commit: before it reaches the disk, or with after set,
// once it made the file durable but before it returns.
type gateFS struct {
	FS
	after   bool
	mu      sync.Mutex
	armed   bool
	entered chan struct{}
	release chan struct{}
}

func newGateFS(fsys FS) *gateFS {
	return &gateFS{FS: fsys, entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *gateFS) Create(p string) (File, error)   { return g.wrap(g.FS.Create(p)) }
func (g *gateFS) OpenFile(p string) (File, error) { return g.wrap(g.FS.OpenFile(p)) }

func (g *gateFS) wrap(f File, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	return &gateFile{File: f, g: g}, nil
}

type gateFile struct {
	File
	g *gateFS
}

func (f *gateFile) Sync() error {
	f.g.mu.Lock()
	hold := f.g.armed
	f.g.armed = false
	f.g.mu.Unlock()
	if !hold {
		return f.File.Sync()
	}
	var err error
	if f.g.after {
		err = f.File.Sync()
	}
	close(f.g.entered)
	<-f.g.release
	if !f.g.after {
		err = f.File.Sync()
	}
	return err
}

// waitBound is how long an operation that must not wait for an fsync may take before
// the test calls it blocked: generous, since only a deadlock-like wait exceeds it.
const waitBound = 20 * time.Second

// syncHeld starts a Sync of l on another goroutine and returns once it is inside its
// first fsync; the returned channel yields its result after g.release is closed.
func syncHeld(t *testing.T, g *gateFS, l *PartitionLog) <-chan error {
	t.Helper()
	g.mu.Lock()
	g.armed = true
	g.mu.Unlock()
	res := make(chan error, 1)
	go func() { res <- l.Sync() }()
	select {
	case <-g.entered:
	case <-time.After(waitBound):
		t.Fatal("the Sync never reached its fsync")
	}
	return res
}

func requireReturns(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(waitBound):
		t.Fatalf("%s waited for the fsync in flight", what)
	}
}

// Retention and DeleteRecords remove segments while a group commit is fsyncing them on
// a sync worker: the removal does not wait for the fsync (the event loop never waits
// on a flush), the Sync then completes without taking the log offline, and a crash
// afterwards keeps both the removal and every batch the Sync covered. Run with -race.
func TestDeleteSegmentsDoesNotWaitForASyncInFlight(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	g := newGateFS(m)
	files := NewFileCache(g, 64)
	l := openTestLog(t, files, st, smallSegments)
	var written [][]byte
	for len(l.Segments()) < 4 {
		written = append(written, appendBatch(t, l, 1000, 2, 50, 1))
	}
	end := l.EndOffset()
	cut := l.Segments()[1].EndOffset
	res := syncHeld(t, g, l) // held in segment 0's fsync

	requireReturns(t, "DeleteSegmentsBelow", func() {
		require.NoError(t, l.DeleteSegmentsBelow(cut))
	})
	require.Equal(t, cut, l.StartOffset())
	close(g.release)
	require.NoError(t, <-res, "a Sync whose segments were removed under it still succeeds")

	m.Crash(zeroRand{})
	l = openTestLog(t, m, st, smallSegments)
	defer l.Close()
	require.Equal(t, cut, l.StartOffset(), "the removal is durable")
	require.Equal(t, end, l.EndOffset(), "every batch the Sync covered survived the crash")
	got := readAll(t, l)
	require.Equal(t, written[len(written)-len(got):], got)
}

// Deleting a topic closes its logs while a group commit may be fsyncing them: Close
// does not wait for it, the Sync reports the log closed, and the log reopens with every
// batch that was durable.
func TestCloseDoesNotWaitForASyncInFlight(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	g := newGateFS(m)
	files := NewFileCache(g, 64)
	l := openTestLog(t, files, st, smallSegments)
	for len(l.Segments()) < 3 {
		appendBatch(t, l, 1000, 2, 50, 1)
	}
	end := l.EndOffset()
	res := syncHeld(t, g, l)
	requireReturns(t, "Close", func() { require.NoError(t, l.Close()) })
	close(g.release)
	<-res // closed under it: an error or nil, but never a taint (checked below)

	tainted, err := l.tainted()
	require.NoError(t, err)
	require.False(t, tainted, "a Sync cut short by Close is not a failed fsync")
	l = openTestLog(t, files, st, smallSegments)
	defer l.Close()
	require.Equal(t, end, l.EndOffset(), "nothing was lost by closing during the Sync")
}
