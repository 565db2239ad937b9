package console_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The console in a real browser: headless Chromium (Debian's chromium package, which
// .ci/run installs) driven with chromedp against a node with data. Every page loads
// without a console error and shows the node's brokers, partitions, ISR, records and
// lag; a read-only console shows no admin action, an admin one creates a topic after a
// confirmation. SLUICE_UPDATE_SCREENSHOTS=1 writes each page's screenshot to
// docs/images/ (docs/console.md shows them); otherwise they go to a temporary folder.
func TestConsoleInBrowser(t *testing.T) {
	exe := findChromium(t)
	start := time.Now()
	shots := t.TempDir()
	if os.Getenv("SLUICE_UPDATE_SCREENSHOTS") != "" {
		shots = filepath.Join("..", "docs", "images")
		require.NoError(t, os.MkdirAll(shots, 0o755))
	}
	// Chromium starts while the nodes fill with data.
	launched := make(chan launch, 1)
	go func() { launched <- startBrowser(exe) }()
	f := startFixture(t, false)
	fa := startFixture(t, true)
	b := useBrowser(t, exe, <-launched)
	t.Logf("nodes and browser started in %s", time.Since(start))

	t.Run("read-only", func(t *testing.T) {
		shot := func(name string) {
			require.Zero(t, b.count(t, "[data-admin]"), "%s shows an admin action", name)
			b.screenshot(t, filepath.Join(shots, "console-"+name+".png"))
		}
		text := b.open(t, f.base, "#/", "overview")
		port := f.n.Addr()[strings.LastIndex(f.n.Addr(), ":")+1:]
		require.Regexp(t, `^1 127\.0\.0\.1:`+port+` — registered controller this node 12 12$`,
			b.textOf(t, `#brokers tr[data-broker="1"]`))
		require.Contains(t, text, "Every partition has a leader and a full ISR")
		require.Contains(t, text, "read-only")
		shot("overview")

		text = b.open(t, f.base, "#/topics", "topics")
		require.NotContains(t, text, "Create topic")
		require.Regexp(t, `^orders 3 1 30 0 0$`, b.textOf(t, `#topics tr[data-topic="orders"]`))
		shot("topics")

		b.open(t, f.base, "#/topics/orders", "topic")
		require.Equal(t, 3, b.count(t, "#partitions tbody tr"))
		for p := 0; p < 3; p++ {
			row := b.textOf(t, fmt.Sprintf(`#partitions tr[data-partition="%d"]`, p))
			// partition, leader 1, replicas 1, ISR 1, no offline replica, offsets 0 to 10
			require.Regexp(t, fmt.Sprintf(`^%d 1 1 1 — 0 10 10 `, p), row)
		}
		shot("topic")

		b.open(t, f.base, "#/messages?topic=orders&partition=1&offset=2&limit=3", "messages")
		require.Equal(t, 3, b.count(t, "#records tbody tr"))
		first := b.textOf(t, `#records tr[data-offset="2"]`)
		require.Contains(t, first, "order-1-2")
		require.Contains(t, first, `"amount": 20`) // pretty-printed JSON
		shot("messages")
		b.open(t, f.base, "#/messages?topic=events&partition=0&offset=3", "messages")
		require.Contains(t, b.textOf(t, `#records tr[data-offset="3"]`), "source: test")
		require.Contains(t, b.textOf(t, `#records tr[data-offset="4"]`), "00 ff 10 80")

		b.open(t, f.base, "#/groups", "groups")
		require.Regexp(t, `^billing Empty — — 0 9 1$`,
			b.textOf(t, `#groups tr[data-group="billing"]`))
		require.Regexp(t, `^audit Stable consumer \S+ 1 0 1$`,
			b.textOf(t, `#groups tr[data-group="audit"]`))
		shot("groups")

		b.open(t, f.base, "#/groups/billing", "group")
		require.Contains(t, b.textOf(t, "#total-lag"), "9")
		require.Regexp(t, `^orders 0 4 10 6`, b.textOf(t, `#lag tr[data-lag="orders-0"]`))
		shot("group")
		b.open(t, f.base, "#/groups/audit", "group")
		require.Contains(t, b.textOf(t, "body"), "audit-consumer")
		require.Contains(t, b.textOf(t, "body"), "events: 0")
		b.wantErrors(t, 0)

		b.open(t, f.base, "#/messages?topic=orders&partition=0&offset=999", "messages")
		require.Contains(t, b.textOf(t, "[data-error]"), "outside partition orders-0")
		b.wantErrors(t, 1) // the 416 of that read, which the page shows
		// The live charts: produce (audit consumes events) while the page polls, until the
		// rates show it.
		b.open(t, f.base, "#/charts", "charts")
		ctx := ctxFor(t, 20*time.Second)
		moving := func() bool {
			p := b.textOf(t, `[data-chart="Produce rate"] .legend`)
			c := b.textOf(t, `[data-chart="Consume rate"] .legend`)
			return !strings.HasSuffix(p, ": 0") && !strings.HasSuffix(c, ": 0") &&
				strings.Contains(p, ":") && strings.Contains(c, ":")
		}
		for i := 0; i < 60 && !moving(); i++ {
			require.NoError(t, f.cl.ProduceSync(ctx,
				&kgo.Record{Topic: "orders", Partition: int32(i % 3), Value: []byte(`{"more":1}`)},
				&kgo.Record{Topic: "events", Value: []byte("later event")}).FirstErr())
			time.Sleep(200 * time.Millisecond)
		}
		require.True(t, moving(), "the charts show no produce or consume rate")
		require.Equal(t, 4, b.count(t, "#charts .chart"))
		require.GreaterOrEqual(t, b.count(t, `#charts polyline`), 4) // produce, consume, 2 lags
		b.screenshot(t, filepath.Join(shots, "console-charts.png"))
		b.wantErrors(t, 0)

		// Auto-refresh: a topic page left open shows a record produced after it was
		// drawn, with no navigation.
		b.open(t, f.base, "#/topics/orders", "topic")
		row := `#partitions tr[data-partition="0"]`
		before := b.textOf(t, row)
		require.NoError(t, f.cl.ProduceSync(ctxFor(t, 5*time.Second), &kgo.Record{
			Topic: "orders", Partition: 0, Value: []byte(`{"late":1}`)}).FirstErr())
		deadline := time.Now().Add(15 * time.Second)
		for b.textOf(t, row) == before && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
		}
		require.NotEqual(t, before, b.textOf(t, row), "the open page was not refreshed")
		require.NotEmpty(t, b.textOf(t, "#refreshed"))
		require.Equal(t, "topic", b.attr(t, "#main", "data-page"))
		b.wantErrors(t, 0)
	})

	t.Run("admin", func(t *testing.T) {
		b.open(t, fa.base, "#/topics", "topics")
		require.Contains(t, b.textOf(t, "#mode"), "admin enabled")
		require.Equal(t, 1, b.count(t, `[data-admin="create-topic"]`))
		form := `form[data-admin="create-topic"] `
		b.run(t, chromedp.SetValue(chromedp.CSS(form+`input[name="name"]`), "from-browser"),
			chromedp.SetValue(chromedp.CSS(form+`input[name="partitions"]`), "2"),
			chromedp.Click(chromedp.CSS(form+`button[type="submit"]`)),
			chromedp.WaitVisible(chromedp.CSS("#confirm[open]")))
		require.Contains(t, b.textOf(t, "#confirm-text"), `Create topic "from-browser"`)
		b.screenshot(t, filepath.Join(shots, "console-admin-confirm.png"))
		b.run(t, chromedp.Click(chromedp.CSS("#confirm-ok")),
			chromedp.WaitVisible(chromedp.CSS(`#main[data-ready="1"][data-page="topic"]`)))
		require.Equal(t, 2, b.count(t, "#partitions tbody tr"))
		td, err := fa.adm.ListTopics(ctxFor(t, 5*time.Second), "from-browser")
		require.NoError(t, err)
		require.Len(t, td["from-browser"].Partitions, 2)
		b.open(t, fa.base, "#/groups/billing", "group")
		require.Equal(t, 1, b.count(t, `[data-admin="reset-offsets"]`))
		b.wantErrors(t, 0)
	})
	t.Logf("browser test took %s; screenshots in %s", time.Since(start), shots)
}

// findChromium is the browser's path; the test skips without one (fails under CI,
// whose .ci/run installs it).
func findChromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome",
		"headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium on PATH under CI: .ci/run installs Debian's chromium package")
	}
	t.Skip("skipping the browser test: no chromium on PATH " +
		"(apt-get install chromium)")
	return ""
}

// browser is one headless Chromium tab and the errors its pages logged.
type browser struct {
	ctx  context.Context
	base string // the console the tab shows
	mu   sync.Mutex
	errs []string
}

type launch struct {
	b       *browser
	cancels []context.CancelFunc
	err     error
}

// startBrowser starts Chromium with a tab. The whole browser test is bounded: the
// browser is killed a minute after it starts.
func startBrowser(exe string) launch {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe),
		chromedp.NoSandbox, chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-gpu", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelTab := chromedp.NewContext(actx)
	l := launch{b: &browser{ctx: bctx}, cancels: []context.CancelFunc{cancelTab, cancelAlloc,
		cancel}}
	l.err = chromedp.Do(bctx)
	return l
}

// useBrowser skips the test when Chromium could not start (fails it under CI), and
// collects the errors its pages log until the test ends.
func useBrowser(t *testing.T, exe string, l launch) *browser {
	stop := func() {
		for _, c := range l.cancels {
			c()
		}
	}
	if l.err != nil {
		stop()
		if os.Getenv("CI") != "" {
			t.Fatalf("chromium %s cannot start under CI: %v", exe, l.err)
		}
		t.Skipf("skipping the browser test: chromium %s cannot start: %v", exe, l.err)
	}
	b := l.b
	// Errors, exceptions and error entries of the browser log (a failed request, a
	// blocked script), in the order the page wrote them.
	messages := chromedp.Console(b.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.mu.Lock()
				b.errs = append(b.errs, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line+1))
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { stop(); <-done })
	return b
}

// wantErrors requires exactly n errors logged since the last call, and forgets them.
func (b *browser) wantErrors(t *testing.T, n int) {
	t.Helper()
	time.Sleep(100 * time.Millisecond) // let the reader take what the page just wrote
	b.mu.Lock()
	defer b.mu.Unlock()
	require.Len(t, b.errs, n, "browser errors: %v", b.errs)
	b.errs = nil
}

func (b *browser) run(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	err := chromedp.Do(b.ctx, actions...)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the browser test ran out of its time bound: %v", err)
	}
	require.NoError(t, err)
}

// open shows the console's page at hash and waits until it is drawn; its text. The
// console is loaded when the tab shows another base (or none), else the page follows
// the hash as a person's click would.
func (b *browser) open(t *testing.T, base, hash, page string) string {
	t.Helper()
	ready := chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(
		`#main[data-ready="1"][data-page=%q][data-hash=%q]`, page, hash)))
	if b.base != base {
		b.run(t, chromedp.Navigate(base+"/"+hash), ready)
		b.base = base
	} else {
		_, err := chromedp.Run(b.ctx, chromedp.Evaluate[any](
			fmt.Sprintf("location.hash = %q", hash)))
		require.NoError(t, err)
		b.run(t, ready)
	}
	return b.textOf(t, "body")
}

func (b *browser) count(t *testing.T, sel string) int {
	t.Helper()
	nodes, err := chromedp.Run(b.ctx, chromedp.Nodes(chromedp.CSSAll(sel),
		chromedp.AtLeast(0)))
	require.NoError(t, err)
	return len(nodes)
}

// textOf is the visible text of the first element matching sel, waiting up to 3 s for
// one. It finds the element and reads its text in one script: the charts are redrawn
// every poll, and a lookup by node id followed by a read (chromedp.Text) failed once
// with "No node with given id found" when a redraw replaced the node in between.
func (b *browser) textOf(t *testing.T, sel string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 3*time.Second) // the page is drawn already
	defer cancel()
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); `+
		`return e ? e.innerText : null })()`, sel)
	for {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[*string](js))
		if err == nil && s != nil {
			return strings.Join(strings.Fields(*s), " ")
		}
		select {
		case <-ctx.Done():
			require.NoError(t, err, "no %s on the page", sel)
			require.FailNow(t, "no "+sel+" on the page")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (b *browser) screenshot(t *testing.T, path string) {
	t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, png, 0o644))
}

// attr is the attribute name of the first element matching sel ("" when absent).
func (b *browser) attr(t *testing.T, sel, name string) string {
	t.Helper()
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); `+
		`return e ? (e.getAttribute(%q) || "") : "" })()`, sel, name)
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](js))
	require.NoError(t, err)
	return s
}
