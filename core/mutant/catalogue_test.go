package mutant_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/mutant"
)

// TestCatalogueMatchesHooks: every catalogued mutant has a hook in its package, every
// hook is catalogued, and names are unique — a renamed hook cannot silently drop out of
// `make mutants`.
func TestCatalogueMatchesHooks(t *testing.T) {
	hooks := map[string]bool{}
	for _, dir := range []string{"core/batch", "core/broker", "core/controller", "core/group",
		"core/lifecycle", "core/replica", "disk", "runtime/raftmeta"} {
		files, err := filepath.Glob(filepath.Join("..", "..", dir, "*.go"))
		require.NoError(t, err)
		pkg := filepath.Base(dir)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			require.NoError(t, err)
			for _, part := range strings.Split(string(src), `mutantOn("`)[1:] {
				name := part[:strings.IndexByte(part, '"')]
				hooks[pkg+"/"+name] = true
			}
		}
	}
	seen := map[string]bool{}
	for _, m := range mutant.Catalogue {
		require.False(t, seen[m.Name], "%s catalogued twice", m.Name)
		seen[m.Name] = true
		require.True(t, hooks[m.Name], "%s has no hook in %s", m.Name, m.Package)
		require.True(t, strings.HasPrefix(m.Name, filepath.Base(m.Package)+"/"), m.Name)
		require.NotEmpty(t, m.Bug)
		require.NotEmpty(t, m.Unit)
	}
	for h := range hooks {
		require.True(t, seen[h], "hook %s is not catalogued", h)
	}
	require.GreaterOrEqual(t, len(mutant.Catalogue), 30)
}
