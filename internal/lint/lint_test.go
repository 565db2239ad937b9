package lint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := RepoRoot(".")
	require.NoError(t, err)
	return root
}

// TestRepoCoreIsPure is the rule itself: the core must stay deterministic.
func TestRepoCoreIsPure(t *testing.T) {
	findings, err := CheckPurityTree(filepath.Join(repoRoot(t), "core"))
	require.NoError(t, err)
	for _, f := range findings {
		t.Errorf("%s", f)
	}
}

func TestRepoEveryPackageHasDocGo(t *testing.T) {
	problems, err := CheckDocs(repoRoot(t))
	require.NoError(t, err)
	for _, p := range problems {
		t.Error(p)
	}
}

func TestRepoIsGofmtClean(t *testing.T) {
	problems, err := CheckFormattedTree(repoRoot(t))
	require.NoError(t, err)
	for _, p := range problems {
		t.Error(p)
	}
}

func messages(t *testing.T, src string) []string {
	t.Helper()
	fs, err := CheckPuritySource("bad.go", []byte(src))
	require.NoError(t, err)
	var out []string
	for _, f := range fs {
		out = append(out, f.Message)
	}
	return out
}

func TestCheckPurityCatchesEveryForbiddenThing(t *testing.T) {
	src := `package bad

import (
	"crypto/rand"
	mrand "math/rand"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	clock "time"
)

func f() {
	go func() {}()
	_ = clock.Now()
	clock.Sleep(1)
	<-clock.After(1)
	_ = clock.Since(clock.Unix(0, 0))
	_ = clock.Until(clock.Unix(0, 0))
	clock.AfterFunc(1, nil)
	_ = clock.NewTimer(1)
	_ = clock.NewTicker(1)
	_ = clock.Tick(1)
	now := clock.Now // taken as a value, still a clock read
	_ = now
}
`
	got := strings.Join(messages(t, src), "\n")
	for _, imp := range ForbiddenImports {
		require.Contains(t, got, `core must not import "`+imp+`"`)
	}
	for _, fn := range ForbiddenTime {
		require.Contains(t, got, "core must not use time."+fn+" ")
	}
	require.Contains(t, got, "go statement")
	require.Equal(t, 2, strings.Count(got, "time.Now "), "call and value both reported")
}

func TestCheckPurityAllowsPlainTimeValues(t *testing.T) {
	src := `package good

import "time"

// Comments may say time.Now() and go func() without harm.
func f(now time.Time, d time.Duration) time.Time {
	s := "time.Sleep"
	_ = s
	return now.Add(d).Add(time.Millisecond).Truncate(time.Second)
}

func g() {
	time := struct{ Now int }{} // a local named time is not the package
	_ = time.Now
}
`
	require.Empty(t, messages(t, src))
}

func TestCheckPurityRejectsDotImportOfTime(t *testing.T) {
	got := messages(t, "package bad\n\nimport . \"time\"\n\nvar _ = Second\n")
	require.Len(t, got, 1)
	require.Contains(t, got[0], "dot-import")
}

func TestCheckPurityReportsPositions(t *testing.T) {
	fs, err := CheckPuritySource("x.go", []byte("package x\n\nfunc f() {\n\tgo f()\n}\n"))
	require.NoError(t, err)
	require.Len(t, fs, 1)
	require.Equal(t, "x.go:4:2: core must not start goroutines (go statement)", fs[0].String())
}

func TestCheckFormatted(t *testing.T) {
	require.NoError(t, CheckFormatted("ok.go", []byte("package x\n\nvar a = 1\n")))
	require.ErrorContains(t, CheckFormatted("bad.go", []byte("package x\nvar  a=1\n")),
		"bad.go: not gofmt-clean")
	require.ErrorContains(t, CheckFormatted("broken.go", []byte("package x\nfunc {")),
		"does not parse")
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
}

func TestCheckDocs(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "go.mod"), "module example.com/m\n\ngo 1.26\n")
	writeFile(t, filepath.Join(root, "tools.go"), "//go:build tools\n\npackage tools\n")
	writeFile(t, filepath.Join(root, "good", "doc.go"), "// Package good is good.\npackage good\n")
	writeFile(t, filepath.Join(root, "good", "a.go"), "package good\n")
	writeFile(t, filepath.Join(root, "nodoc", "a.go"), "// Package nodoc.\npackage nodoc\n")
	writeFile(t, filepath.Join(root, "emptydoc", "doc.go"), "package emptydoc\n")
	writeFile(t, filepath.Join(root, "cmd", "x", "main.go"), "// Command x.\npackage main\n")
	writeFile(t, filepath.Join(root, "cmd", "y", "main.go"), "package main\n")
	writeFile(t, filepath.Join(root, "onlytests", "a_test.go"), "package onlytests\n")
	writeFile(t, filepath.Join(root, "nodoc", "testdata", "z.go"), "package z\n")

	problems, err := CheckDocs(root)
	require.NoError(t, err)
	want := []string{
		filepath.Join(root, "cmd", "y") + ": package main has no doc.go",
		filepath.Join(root, "emptydoc") + ": doc.go has no package comment",
		filepath.Join(root, "nodoc") + ": package nodoc has no doc.go",
	}
	require.Equal(t, want, problems)
}
