package e2e

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/pluginhost/pluginhost/api"
)

// uiURL is what `pluginhost ui -show-url [page]` prints: on this env's
// unix-socket agent, a loopback URL that signs one browser in once.
func (e *env) uiURL(t testing.TB, page ...string) string {
	t.Helper()
	r := e.cli(append([]string{"ui", "-show-url"}, page...)...)
	u := strings.TrimSpace(r.stdout)
	if r.code != 0 || !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.Contains(u, "#ott=") {
		t.Fatalf("pluginhost ui -show-url: %+v", r)
	}
	return u
}

// origin is the UI's scheme://host:port.
func origin(t testing.TB, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Scheme + "://" + p.Host
}

// Issue 27: a browser signed in by `pluginhost ui` walks every page, and
// each shows what the API says: jobs and their allocations, an
// allocation's tasks, logs and usage charts, a CSI plugin with its
// fingerprint, a volume with its claim's steps, a plugin of another type
// with its instances, the event stream and the agent. The screenshots in
// the README come from here (make screenshots).
func TestUIWalksEveryPage(t *testing.T) {
	needCgroups(t)
	e := newEnv(t, csiConfig)
	a := e.start()
	b := newBrowser(t)
	ctx := context.Background()

	plug := startVolPlugin(t, e, a, "raw_exec", "ui-csi", nil)
	createVolume(t, e, "ui-data", "ui-csi", "single-node-writer")
	user := claimTask("app", e.markerFor("app"), `echo hello from the app`, volumeMount("data", "/srv/ui-data", false))
	appAlloc := a.runJob("app", jobHCL("app", restartPolicy+"\n"+volumeBlock("data", "ui-data", "single-node-writer", false), user))[0]
	a.waitVolume("ui-data", "claim published", func(v *api.CSIVolume, err error) bool {
		return err == nil && len(v.Claims) == 1 && v.Claims[0].State == "published"
	})
	kvAlloc := a.runJob("gpkv", goPluginExampleJob(t, "plugin-go-grpc"))[0]
	a.waitAlloc(kvAlloc, "plugin healthy", and(running("kv"), hasEvents("kv", api.TaskPluginHealthy, 1)))

	base := origin(t, e.uiURL(t))
	b.open(e.uiURL(t))
	b.screenshot("jobs")
	jobs, err := a.client.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	b.waitText("main", ids...)

	allocs, err := a.client.JobAllocations(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	b.open(base + "/ui/jobs/app")
	b.waitText("main", short(allocs[0].ID), "Rollout", "Last healthy version", "Versions", "Recent events")

	// A job with two versions: the page diffs them.
	web := shTask("t", e.markerFor("web"), sleeper)
	a.runJob("web", jobHCL("web", restartPolicy, web))
	web.env = map[string]string{"COLOR": "blue"}
	a.runJob("web", jobHCL("web", restartPolicy, web))
	b.open(base + "/ui/jobs/web")
	b.waitText("main", "Last healthy version", "version 1")
	b.waitText(".diff", "+", "COLOR", "blue")
	b.screenshot("job")

	b.open(base + "/ui/allocations/" + appAlloc)
	b.waitText("main", "app", "ui-data", "published", "Memory and CPU")
	// Two samples draw a line: the charts come from the cgroup figures.
	b.run("usage chart drawn", chromedp.WaitVisible(chromedp.CSS(`svg.chart polyline`)))
	b.screenshot("allocation")

	b.open(base + "/ui/allocations/" + appAlloc + "/app/logs")
	b.waitText("pre.log", "hello from the app")

	p, err := a.client.Plugin(ctx, "ui-csi")
	if err != nil {
		t.Fatal(err)
	}
	b.open(base + "/ui/csi/plugins")
	b.waitText("main", "ui-csi", p.Provider)
	b.open(base + "/ui/csi/plugins/ui-csi")
	b.waitText("main", p.Provider, "Fingerprint", "Instances", short(plug.alloc), "CONTROLLER_SERVICE")
	b.screenshot("csi-plugin")

	b.open(base + "/ui/csi/volumes")
	b.waitText("main", "ui-data", "ready")
	b.open(base + "/ui/csi/volumes/ui-data")
	b.waitText("main", "Claims", short(appAlloc), "controller-published", "published")
	b.screenshot("volume")

	b.open(base + "/ui/plugins")
	b.waitText("main", "kv_grpc", short(kvAlloc))
	b.open(base + "/ui/plugins/kv/kv_grpc")
	b.waitText("main", "pluginhost:///kv/kv_grpc", "active", "Reattach record", `"Pid"`)
	b.screenshot("plugin")

	b.open(base + "/ui/events")
	b.waitText("main", "Allocation", "Task")
	b.screenshot("events")

	self, err := a.client.Self(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b.open(base + "/ui/agent")
	b.waitText("main", self.Version, self.NodeName, self.DataDir)
}

// The screen follows the agent without a reload: a job submitted through
// the API appears in the list, its stop turns it dead, and an allocation's
// OOM kill appears on its page, marked.
func TestUIIsLive(t *testing.T) {
	needCgroups(t)
	e := newEnv(t, "")
	a := e.start()
	b := newBrowser(t)
	base := origin(t, e.uiURL(t))
	b.open(e.uiURL(t))
	// A mark that a reload would lose.
	eval[bool](b, `window.__noReload = true`)

	a.runJob("later", jobHCL("later", restartPolicy, shTask("t", e.markerFor("later"), sleeper)))
	b.waitText("main", "later", "running")
	a.stopJob("later")
	b.waitText("main table", "dead")

	tk := shTask("hog", e.markerFor("hog"), `sleep 2; x=$(head -c 200000000 /dev/zero | tr '\0' a); echo survived`)
	tk.extra = "      resources {\n        memory = 32\n      }\n"
	alloc := a.runJob("oom", jobHCL("oom", noRestart, tk))[0]
	// Through the page's own link handling, as a click would.
	eval[bool](b, `history.pushState(null, '', '/ui/allocations/`+alloc+`'); dispatchEvent(new PopStateEvent('popstate')); true`)
	b.waitText("main", "hog", "running")
	b.waitText("ol.timeline li.oom", "OOM Killed")
	if !eval[bool](b, `window.__noReload === true`) {
		t.Fatal("the page was reloaded")
	}
	_ = base
}

// Whatever a job's task writes or a plugin says is text: a task that logs
// markup and a go_plugin binary whose handshake line is markup show it as
// such, and no script of theirs runs.
func TestUIShowsTextNotMarkup(t *testing.T) {
	e := newEnv(t, "")
	a := e.start()
	b := newBrowser(t)
	evil := `<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>`
	alloc := a.runJob("x", jobHCL("x", restartPolicy, shTask("t", e.markerFor("x"), `echo '`+evil+`'; exec sleep 1000000`)))[0]
	base := origin(t, e.uiURL(t))
	b.open(e.uiURL(t))
	b.open(base + "/ui/allocations/" + alloc + "/t/logs")
	b.waitText("pre.log", `<img src=x onerror="window.pwned=1">`)
	if !eval[bool](b, `window.pwned === undefined && document.querySelectorAll('main img, main script').length === 0`) {
		t.Fatal("markup from a task's log was rendered")
	}
	// The answers carry the policy that would stop an inline script anyway.
	csp := eval[string](b, `fetch('/ui/jobs').then(r => r.headers.get('Content-Security-Policy'))`)
	if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Fatalf("Content-Security-Policy %q", csp)
	}
}

// A browser nobody signed in sees nothing but the sign-in page; a one-time
// URL signs in one browser once (a second browser with the same URL is
// refused); a page of another origin cannot read the API; and the read
// token's buttons are disabled.
func TestUIStrangers(t *testing.T) {
	e := newEnv(t, "")
	a := e.start()
	a.runJob("secret-job", jobHCL("secret-job", restartPolicy, shTask("t", e.markerFor("s"), sleeper)))
	u := e.uiURL(t)
	base := origin(t, u)

	stranger := newBrowser(t)
	stranger.open(base + "/ui/jobs")
	stranger.waitText("main", "Sign in", "Token")
	body := eval[string](stranger, `fetch('/v1/jobs').then(r => r.status + ' ' + r.statusText)`)
	if !strings.HasPrefix(body, "401") {
		t.Fatalf("the API without a token answered a stranger's page: %s", body)
	}
	if text := eval[string](stranger, `document.body.innerText`); strings.Contains(text, "secret-job") {
		t.Fatal("a stranger's browser shows a job")
	}

	first := newBrowser(t)
	first.open(u)
	first.waitText("main", "secret-job")
	second := newBrowser(t)
	second.run("open the used URL", chromedp.Navigate(u))
	second.waitText("#status", "The one-time token was refused")
	second.waitText("main", "Sign in")

	// Another origin's page (a page on another port of this machine) may
	// send a request, but the guard refuses its Origin and no CORS
	// header lets it read anything.
	third := newBrowser(t)
	third.run("open a page of another origin", chromedp.Navigate("data:text/html,<title>other</title>"))
	got := eval[string](third, `fetch('`+base+`/v1/jobs', {headers: {'X-Nomad-Token': 'guess'}}).then(r => 'read ' + r.status).catch(e => 'blocked')`)
	if got != "blocked" {
		t.Fatalf("another origin's page read the API: %s", got)
	}

	tokens, err := a.client.Tokens(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var read string
	for _, tk := range tokens.Tokens {
		if tk.Type == api.TokenTypeRead {
			read = tk.SecretID
		}
	}
	reader := newBrowser(t)
	reader.open(base + "/ui/settings/tokens")
	reader.run("sign in with the read token",
		chromedp.SendKeys(chromedp.CSS(`#token`), read),
		chromedp.Click(chromedp.CSS(`form.signin button[type=submit]`)))
	reader.waitText("main", "secret-job")
	reader.open(base + "/ui/jobs/secret-job")
	reader.waitText("main", "Rollout")
	if !eval[bool](reader, `[...document.querySelectorAll('.actions button')].every(b => b.disabled)`) {
		t.Fatal("the read token's page has enabled action buttons")
	}
}

// The UI is usable from the keyboard and readable in light and dark: the
// first Tab reaches "Skip to content", the next ones the navigation, every
// form field has a label, and with the system's dark scheme the page is
// dark.
func TestUIAccessible(t *testing.T) {
	e := newEnv(t, "")
	e.start()
	b := newBrowser(t)
	b.open(e.uiURL(t))
	b.waitText("main", "Jobs")
	b.run("tab", chromedp.KeyEvent("\t"))
	if got := eval[string](b, `document.activeElement.textContent`); got != "Skip to content" {
		t.Errorf("the first Tab reaches %q, want the skip link", got)
	}
	b.run("tab", chromedp.KeyEvent("\t"), chromedp.KeyEvent("\t"))
	if got := eval[string](b, `document.activeElement.getAttribute('href') || ''`); !strings.HasPrefix(got, "/ui/") {
		t.Errorf("Tab does not walk the navigation: focus on %q", got)
	}
	b.open(origin(t, e.uiURL(t)) + "/ui/events")
	b.waitText("main", "Topic")
	if n := eval[int](b, `[...document.querySelectorAll('input, select')].filter(el => !document.querySelector('label[for="' + el.id + '"]') && !el.getAttribute('aria-label')).length`); n != 0 {
		t.Errorf("%d form fields without a label", n)
	}
	light := eval[string](b, `getComputedStyle(document.body).backgroundColor`)
	b.run("dark scheme", chromedp.Action[chromedp.Void](func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
		return chromedp.Void{}, err
	}))
	dark := eval[string](b, `getComputedStyle(document.body).backgroundColor`)
	if light == dark || dark != "rgb(21, 25, 23)" {
		t.Errorf("background light %s, dark %s: want the dark scheme's", light, dark)
	}
}
