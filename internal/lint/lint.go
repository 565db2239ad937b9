package lint

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ForbiddenImports are the packages core/ must not import: each brings in the
// operating system, the network, concurrency or randomness that a seed cannot replay.
var ForbiddenImports = []string{
	"os", "os/exec", "net", "net/http", "sync", "sync/atomic",
	"math/rand", "math/rand/v2", "crypto/rand",
}

// ForbiddenTime are the functions of package time that read the wall clock or wait on
// it. time.Duration, time.Unix and the like stay allowed: they are plain values.
var ForbiddenTime = []string{
	"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "NewTimer", "NewTicker", "Tick",
}

// Finding is one rule broken at one place.
type Finding struct {
	Pos     token.Position
	Message string
}

func (f Finding) String() string { return fmt.Sprintf("%s: %s", f.Pos, f.Message) }

// CheckPurity reports every import, time call and go statement in file that core/ may
// not have. Uses of a forbidden time function are reported whether called or taken
// as a value, under whatever name the file imports "time".
func CheckPurity(fset *token.FileSet, file *ast.File) []Finding {
	var out []Finding
	report := func(n ast.Node, format string, args ...any) {
		out = append(out, Finding{fset.Position(n.Pos()), fmt.Sprintf(format, args...)})
	}
	timeNames := map[string]bool{}
	for _, imp := range file.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue // the parser already rejects malformed import paths
		}
		if slices.Contains(ForbiddenImports, path) {
			report(imp, "core must not import %q", path)
		}
		if path != "time" {
			continue
		}
		switch {
		case imp.Name == nil:
			timeNames["time"] = true
		case imp.Name.Name == ".":
			report(imp, `core must not dot-import "time" (its clock calls could not be checked)`)
		case imp.Name.Name != "_":
			timeNames[imp.Name.Name] = true
		}
	}
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			report(n, "core must not start goroutines (go statement)")
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && timeNames[id.Name] && id.Obj == nil &&
				slices.Contains(ForbiddenTime, n.Sel.Name) {
				report(n, "core must not use time.%s (time is an input of the actors)", n.Sel.Name)
			}
		}
		return true
	})
	return out
}

// CheckPuritySource parses src as a file named name and runs CheckPurity on it.
func CheckPuritySource(name string, src []byte) ([]Finding, error) {
	fset := token.NewFileSet()
	// Object resolution stays on: it tells a local variable named "time" (resolved)
	// from the imported package (unresolved).
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		return nil, err
	}
	return CheckPurity(fset, f), nil
}

// CheckPurityTree runs CheckPurity over every non-test .go file under dir.
func CheckPurityTree(dir string) ([]Finding, error) {
	var out []Finding
	err := walkGo(dir, func(path string) error {
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fs, err := CheckPuritySource(path, src)
		out = append(out, fs...)
		return err
	})
	return out, err
}

// CheckFormatted returns an error when src is not exactly what gofmt would write.
func CheckFormatted(name string, src []byte) error {
	want, err := format.Source(src)
	if err != nil {
		return fmt.Errorf("%s: does not parse: %w", name, err)
	}
	if !bytes.Equal(want, src) {
		return fmt.Errorf("%s: not gofmt-clean (run `make fmt`)", name)
	}
	return nil
}

// CheckFormattedTree runs CheckFormatted over every .go file under root.
func CheckFormattedTree(root string) ([]error, error) {
	var out []error
	err := walkGo(root, func(path string) error {
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := CheckFormatted(path, src); err != nil {
			out = append(out, err)
		}
		return nil
	})
	return out, err
}

// CheckDocs reports package directories under root without a doc.go that carries the
// package comment. Directories whose files are all excluded by build constraints (such
// as tools.go) or that hold only tests are not packages for this purpose. A command
// (package main) may keep its comment in another file, as Go commands usually do.
func CheckDocs(root string) ([]string, error) {
	ctx := build.Default
	ctx.BuildTags = append(ctx.BuildTags, "invariants")
	var out []string
	err := walkDirs(root, func(dir string) error {
		pkg, err := ctx.ImportDir(dir, build.ImportComment)
		var noGo *build.NoGoError
		if errors.As(err, &noGo) || (err == nil && len(pkg.GoFiles) == 0) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		if problem := docProblem(dir, pkg); problem != "" {
			out = append(out, problem)
		}
		return nil
	})
	return out, err
}

// docProblem says what is wrong with the package documentation in dir, if anything.
func docProblem(dir string, pkg *build.Package) string {
	hasDoc := slices.Contains(pkg.GoFiles, "doc.go")
	if hasDoc {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, filepath.Join(dir, "doc.go"), nil,
			parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			return fmt.Sprintf("%s: doc.go does not parse: %v", dir, err)
		}
		if f.Doc == nil || strings.TrimSpace(f.Doc.Text()) == "" {
			return fmt.Sprintf("%s: doc.go has no package comment", dir)
		}
		return ""
	}
	if pkg.Name == "main" && strings.TrimSpace(pkg.Doc) != "" {
		return ""
	}
	return fmt.Sprintf("%s: package %s has no doc.go", dir, pkg.Name)
}

// walkDirs calls fn for root and every directory below it that Go would consider:
// hidden directories, testdata and directories starting with "_" are skipped.
func walkDirs(root string, fn func(dir string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if path != root && skipDir(d.Name()) {
			return filepath.SkipDir
		}
		return fn(path)
	})
}

// walkGo calls fn for every .go file under root, in lexical order, with the same
// directory skipping as walkDirs.
func walkGo(root string, fn func(path string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".go") {
			return fn(path)
		}
		return nil
	})
}

func skipDir(name string) bool {
	return name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") ||
		strings.HasPrefix(name, "_")
}

// RepoRoot finds the directory holding go.mod at or above dir.
func RepoRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above " + dir)
		}
		dir = parent
	}
}
