package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's Chromium, which `make test` installs.
const chromiumPath = "/usr/bin/chromium"

// browser is a headless Chromium of its own (a new profile: no token, no
// history), driven over the DevTools protocol.
type browser struct {
	t   testing.TB
	ctx context.Context
}

// newBrowser starts one; without Chromium the test is skipped, unless
// PLUGINHOST_REQUIRE_BROWSER is set (make test sets it), then it fails.
func newBrowser(t testing.TB) *browser {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("PLUGINHOST_REQUIRE_BROWSER") != "" {
			t.Fatalf("no Chromium at %s (make test installs Debian's chromium)", chromiumPath)
		}
		t.Skipf("no Chromium at %s: apt-get install chromium, or make test", chromiumPath)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath),
		chromedp.NoSandbox, // root
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
		// This machine reaches nothing outside: no background calls home.
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		acancel()
	})
	// Start it now, so that a broken Chromium fails here, named. The
	// first Run's context lives as long as the browser: no timeout on it.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return &browser{t: t, ctx: ctx}
}

// run runs actions, bounded by a timeout.
func (b *browser) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v\n%s", what, err, b.dump())
	}
}

// dump is the page's text, for failures.
func (b *browser) dump() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	url, _ := chromedp.Run(ctx, chromedp.Location())
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	return "page " + url + ":\n" + text
}

// open navigates to url and waits for the page's first render.
func (b *browser) open(url string) {
	b.t.Helper()
	b.run("open "+url, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`main .page`)))
}

// waitText waits until the element sel holds every one of want, as text.
func (b *browser) waitText(sel string, want ...string) {
	b.t.Helper()
	js := fmt.Sprintf(`(() => { const el = document.querySelector(%q); if (!el) return false; const t = el.textContent; return %s; })()`,
		sel, jsAll(want))
	b.run(fmt.Sprintf("wait for %q in %s", want, sel), chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(20*time.Second)))
}

func jsAll(want []string) string {
	if len(want) == 0 {
		return "true"
	}
	parts := make([]string, len(want))
	for i, w := range want {
		parts[i] = fmt.Sprintf("t.includes(%q)", w)
	}
	return strings.Join(parts, " && ")
}

// eval evaluates js (awaiting a promise) and returns its result as T.
func eval[T any](b *browser, js string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v\n%s", js, err, b.dump())
	}
	return v
}

// screenshot saves the whole page as <PLUGINHOST_SCREENSHOTS>/<name>.png when
// that is set (make screenshots: the README's pictures come from here).
func (b *browser) screenshot(name string) {
	b.t.Helper()
	dir := os.Getenv("PLUGINHOST_SCREENSHOTS")
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}
