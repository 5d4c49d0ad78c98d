package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/resolver"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/internal/testproc"
)

// countingRegistry adds a counted registry to the fake backend, so that
// the registry routes reach a backend too.
type countingRegistry struct{ *fakeBackend }

func (c countingRegistry) RegisteredPlugins(context.Context, string) ([]*api.PluginListStub, error) {
	c.calls.Add(1)
	return nil, nil
}

func (c countingRegistry) RegisteredPlugin(context.Context, string, string) (*api.Plugin, error) {
	c.calls.Add(1)
	return nil, api.ErrNotFound
}

type tcpServer struct {
	srv    *Server
	be     *fakeBackend
	tokens *Tokens
	logs   *testproc.Buffer
	// parsed counts job sources the server parsed.
	parsed atomic.Int64
	hc     *http.Client
}

// startTCPServer runs a real server on real loopback TCP with tokens, the
// profiler and metrics on, every route of the table live.
func startTCPServer(t *testing.T) *tcpServer {
	t.Helper()
	tokens, err := OpenTokens(TokensConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ts := &tcpServer{be: newFakeBackend(), tokens: tokens, logs: &testproc.Buffer{}}
	ts.be.setReady(true)
	srv, err := NewServer(ServerConfig{
		Addr:    "127.0.0.1:0",
		Backend: countingRegistry{ts.be},
		Logger: hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Trace,
			Output: io.MultiWriter(testWriter{t}, ts.logs)}),
		ParseJob: func(src []byte, filename string) (*jobspec.Job, error) {
			ts.parsed.Add(1)
			return jobspec.Parse(src, filename)
		},
		Metrics:     prometheus.NewRegistry(),
		EnableDebug: true,
		Tokens:      tokens,
	})
	if err != nil {
		t.Fatal(err)
	}
	ts.srv = srv
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	ts.hc = &http.Client{}
	t.Cleanup(func() {
		ts.hc.CloseIdleConnections()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ts
}

// pwnJob is the curl: a job that would run a shell as the agent's
// user.
const pwnJob = `{"Source": "job \"pwn\" {\n group \"g\" {\n task \"t\" {\n driver = \"raw_exec\"\n config {\n command = \"/bin/sh\"\n args = [\"-c\", \"id > /tmp/pwned\"]\n }\n }\n }\n}\n"}`

type rawReq struct {
	method, path, body string
	header             http.Header
	host               string
}

type rawResp struct {
	status int
	header http.Header
	body   []byte
	er     api.ErrorResponse
}

func (ts *tcpServer) do(t *testing.T, rq rawReq) rawResp {
	t.Helper()
	var body io.Reader
	if rq.body != "" {
		body = strings.NewReader(rq.body)
	}
	// A request the guard should have refused may reach a stream that
	// never ends: bound every request, so that such a bug fails the test
	// instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, rq.method, "http://"+ts.srv.Addr()+rq.path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range rq.header {
		req.Header[k] = vs
	}
	if rq.host != "" {
		req.Host = rq.host
	}
	resp, err := ts.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", rq.method, rq.path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := rawResp{status: resp.StatusCode, header: resp.Header, body: raw}
	if resp.StatusCode >= 300 && rq.method != http.MethodHead && resp.StatusCode != http.StatusFound {
		if err := json.Unmarshal(raw, &out.er); err != nil || out.er.Error == "" {
			t.Errorf("%s %s: error body is not the API's JSON error: %q", rq.method, rq.path, raw)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: error Content-Type %q", rq.method, rq.path, ct)
		}
	}
	for k := range resp.Header {
		if strings.HasPrefix(strings.ToLower(k), "access-control-") {
			t.Errorf("%s %s: CORS header %s sent", rq.method, rq.path, k)
		}
	}
	return out
}

// wrongToken differs from tok in its last character only: the closest a
// guess can come.
func wrongToken(tok string) string {
	last := byte('0')
	if tok[len(tok)-1] == last {
		last = '1'
	}
	return tok[:len(tok)-1] + string(last)
}

// concretePath fills a route pattern's wildcards.
func concretePath(pattern string) string {
	switch pattern {
	case "/":
		return "/no/such/endpoint" // the catch-all; "/" itself is the UI's redirect
	case "/{$}":
		return "/"
	}
	return regexp.MustCompile(`\{[a-z]+\}`).ReplaceAllString(pattern, "x")
}

func mutating(m string) bool { return !readOnlyMethod(m) }

// TestGuardEveryRoute walks the router's own table: for every route and
// every method it answers, each way a request can fail to belong is
// refused with its status and reason, and reaches neither the job parser
// nor the backend.
func TestGuardEveryRoute(t *testing.T) {
	ts := startTCPServer(t)
	mgmt, read := ts.tokens.Management(), ts.tokens.Read()
	port := ts.srv.Addr()[strings.LastIndex(ts.srv.Addr(), ":")+1:]
	auth := func(tok string) http.Header { return http.Header{api.HeaderToken: {tok}} }
	jsonAuth := func(tok string) http.Header {
		return http.Header{api.HeaderToken: {tok}, "Content-Type": {"application/json"}}
	}
	type tcase struct {
		name   string
		req    func(method, path string) rawReq
		only   func(method string, rt route) bool
		status int
		field  string
	}
	body := func(m string) string {
		if mutating(m) {
			return pwnJob
		}
		return ""
	}
	cases := []tcase{
		{"no token", func(m, p string) rawReq {
			return rawReq{method: m, path: p, body: body(m), header: http.Header{"Content-Type": {"application/json"}}}
		}, func(_ string, rt route) bool { return !rt.public }, http.StatusUnauthorized, api.HeaderToken},
		{"wrong token", func(m, p string) rawReq {
			return rawReq{method: m, path: p, body: body(m), header: jsonAuth(wrongToken(mgmt))}
		}, nil, http.StatusForbidden, api.HeaderToken},
		{"bearer wrong token", func(m, p string) rawReq {
			return rawReq{method: m, path: p, body: body(m), header: http.Header{"Authorization": {"Bearer nope-nope-nope-nope"},
				"Content-Type": {"application/json"}}}
		}, nil, http.StatusForbidden, api.HeaderToken},
		{"read token on a mutating method or management route", func(m, p string) rawReq {
			return rawReq{method: m, path: p, body: body(m), header: jsonAuth(read)}
		}, func(m string, rt route) bool { return mutating(m) || rt.management }, http.StatusForbidden, api.HeaderToken},
		{"foreign Host", func(m, p string) rawReq {
			return rawReq{method: m, path: p, body: body(m), header: jsonAuth(mgmt), host: "evil.example:" + port}
		}, nil, http.StatusForbidden, "Host"},
		{"Origin present", func(m, p string) rawReq {
			h := jsonAuth(mgmt)
			h.Set("Origin", "http://evil.example")
			return rawReq{method: m, path: p, body: body(m), header: h}
		}, nil, http.StatusForbidden, "Origin"},
		{"text/plain body", func(m, p string) rawReq {
			return rawReq{method: m, path: p, body: body(m), header: http.Header{api.HeaderToken: {mgmt}, "Content-Type": {"text/plain"}}}
		}, func(m string, _ route) bool { return mutating(m) }, http.StatusUnsupportedMediaType, "Content-Type"},
		{"form body", func(m, p string) rawReq {
			return rawReq{method: m, path: p, body: body(m), header: http.Header{api.HeaderToken: {mgmt},
				"Content-Type": {"application/x-www-form-urlencoded"}}}
		}, func(m string, _ route) bool { return mutating(m) }, http.StatusUnsupportedMediaType, "Content-Type"},
		{"the issue's curl", func(m, p string) rawReq {
			return rawReq{method: m, path: p, body: body(m), host: "evil.example:" + port,
				header: http.Header{"Content-Type": {"text/plain"}, "Origin": {"http://evil.example"}}}
		}, nil, http.StatusForbidden, "Host"},
	}
	table := ts.srv.routeTable()
	if len(table) < 25 {
		t.Fatalf("route table has %d routes; the walk would miss some", len(table))
	}
	n := 0
	for _, rt := range table {
		for _, m := range rt.methods {
			path := concretePath(rt.pattern)
			for _, c := range cases {
				if c.only != nil && !c.only(m, rt) {
					continue
				}
				n++
				before := ts.be.calls.Load()
				resp := ts.do(t, c.req(m, path))
				if m == http.MethodHead && resp.status == c.status {
					continue // no body to name the field in
				}
				if resp.status != c.status || resp.er.Field != c.field {
					t.Errorf("%s %s, %s: %d %q (%s); want %d naming %q", m, path, c.name,
						resp.status, resp.er.Field, resp.er.Error, c.status, c.field)
				}
				if got := ts.be.calls.Load() - before; got != 0 {
					t.Errorf("%s %s, %s: the backend was called %d times", m, path, c.name, got)
				}
			}
		}
	}
	if p := ts.parsed.Load(); p != 0 {
		t.Errorf("%d job sources were parsed", p)
	}
	ts.be.mu.Lock()
	ran, stopped := len(ts.be.ran), len(ts.be.stopped)
	ts.be.mu.Unlock()
	if ran != 0 || stopped != 0 {
		t.Errorf("refused requests ran %d jobs and stopped %d", ran, stopped)
	}
	t.Logf("%d routes, %d refused requests", len(table), n)

	// The same request with the management token does reach the backend:
	// the refusals above are the guard's, not a broken route.
	resp := ts.do(t, rawReq{method: http.MethodPost, path: "/v1/jobs", body: pwnJob, header: jsonAuth(mgmt)})
	if resp.status != http.StatusOK || ts.be.calls.Load() == 0 {
		t.Errorf("management POST /v1/jobs: %d %s", resp.status, resp.body)
	}
	// Authorization: Bearer is Nomad's other header; the read token GETs.
	for _, p := range []string{"/v1/jobs", "/v1/metrics", "/v1/metrics?format=prometheus", "/v1/agent/health", "/v1/allocation/x"} {
		resp := ts.do(t, rawReq{method: http.MethodGet, path: p, header: http.Header{"Authorization": {"Bearer " + read}}})
		if resp.status == http.StatusUnauthorized || resp.status == http.StatusForbidden {
			t.Errorf("read token GET %s: %d %s", p, resp.status, resp.er.Error)
		}
	}
	// pprof answers the management token only.
	if resp := ts.do(t, rawReq{method: http.MethodGet, path: "/debug/pprof/cmdline", header: auth(mgmt)}); resp.status != http.StatusOK {
		t.Errorf("management pprof: %d", resp.status)
	}
	// Loopback names are accepted whatever the port (an SSH tunnel's).
	for _, h := range []string{"localhost:" + port, "127.0.0.1:" + port, "LOCALHOST", "[::1]:8080", "127.9.9.9"} {
		if resp := ts.do(t, rawReq{method: http.MethodGet, path: "/v1/jobs", header: auth(read), host: h}); resp.status != http.StatusOK {
			t.Errorf("Host %q: %d %s", h, resp.status, resp.er.Error)
		}
	}
	// A mutating request without a body needs no content type.
	if resp := ts.do(t, rawReq{method: http.MethodDelete, path: "/v1/job/x", header: auth(mgmt)}); resp.status == http.StatusUnsupportedMediaType {
		t.Errorf("DELETE without a body: 415")
	}
}

// TestReadTokenScrapes: the read token reads metrics and follows the event
// stream, and may not see or rotate the tokens.
func TestReadTokenScrapes(t *testing.T) {
	ts := startTCPServer(t)
	c, err := api.NewClient(ts.srv.Addr(), api.WithToken(ts.tokens.Read()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	if err := c.MetricsPrometheus(ctx, &b); err != nil {
		t.Fatalf("read token: metrics: %v", err)
	}
	es, err := c.Events(ctx)
	if err != nil {
		t.Fatalf("read token: events: %v", err)
	}
	ts.be.publish(&api.Event{Topic: api.TopicAgent, Type: "Ready"})
	if ev, err := es.Next(ctx); err != nil || ev.Type != "Ready" {
		t.Fatalf("read token: event = %+v, %v", ev, err)
	}
	es.Close()
	var se *api.StatusError
	if _, err := c.Tokens(ctx); !errors.As(err, &se) || se.StatusCode != http.StatusForbidden {
		t.Errorf("read token: Tokens = %v, want 403", err)
	}
	if _, err := c.RotateToken(ctx, api.TokenTypeRead); !errors.As(err, &se) || se.StatusCode != http.StatusForbidden {
		t.Errorf("read token: RotateToken = %v, want 403", err)
	}
	if _, err := c.RegisterJobSource(ctx, "x.hcl", []byte("job \"x\" {}")); !errors.As(err, &se) || se.StatusCode != http.StatusForbidden {
		t.Errorf("read token: RegisterJobSource = %v, want 403", err)
	}
}

// TestRotationWithoutRestart: a rotated token fails at once, also for the
// event stream it opened, the new one works, the per-user file follows,
// and a client reading that file follows it; no secret reaches a log line.
func TestRotationWithoutRestart(t *testing.T) {
	cfgHome := shortDir(t)
	t.Setenv("XDG_CONFIG_HOME", cfgHome)
	t.Setenv("SUDO_USER", "")
	ts := startTCPServer(t)
	path, err := api.UserTokenPath(ts.srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(cfgHome, "pluginhost", "tokens", ts.srv.Addr()); path != want {
		t.Fatalf("UserTokenPath = %s, want %s", path, want)
	}
	if err := ts.tokens.Publish(path); err != nil {
		t.Fatal(err)
	}
	checkMode(t, path, 0o600)
	checkMode(t, filepath.Dir(path), 0o700)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// A client without a token reads the per-user file.
	own, err := api.NewClient(ts.srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	if _, err := own.Jobs(ctx); err != nil {
		t.Fatalf("client with the per-user file: %v", err)
	}
	// "localhost" finds the file of 127.0.0.1.
	port := ts.srv.Addr()[strings.LastIndex(ts.srv.Addr(), ":")+1:]
	viaName, err := api.NewClient("localhost:" + port)
	if err != nil {
		t.Fatal(err)
	}
	defer viaName.Close()
	if _, err := viaName.Jobs(ctx); err != nil {
		t.Fatalf("client of localhost: %v", err)
	}

	oldRead, oldMgmt := ts.tokens.Read(), ts.tokens.Management()
	reader, err := api.NewClient(ts.srv.Addr(), api.WithToken(oldRead))
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	es, err := reader.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()

	toks, err := own.RotateToken(ctx, api.TokenTypeRead)
	if err != nil {
		t.Fatal(err)
	}
	if ts.tokens.Read() == oldRead || toks.Tokens[1].SecretID != ts.tokens.Read() {
		t.Fatalf("rotation answered %+v", toks.Tokens[1])
	}
	// The stream opened with the old token ends: Next returns.
	for {
		ev, err := es.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				t.Fatalf("the old read token's event stream did not end: %v", err)
			}
			break
		}
		t.Logf("event before the end: %+v", ev)
	}
	var se *api.StatusError
	if _, err := reader.Jobs(ctx); !errors.As(err, &se) || se.StatusCode != http.StatusForbidden {
		t.Errorf("old read token after rotation: %v, want 403", err)
	}
	if _, err := own.Jobs(ctx); err != nil {
		t.Errorf("management token after the read rotation: %v", err)
	}

	if _, err := own.RotateToken(ctx, api.TokenTypeManagement); err != nil {
		t.Fatal(err)
	}
	if raw, err := os.ReadFile(path); err != nil || strings.TrimSpace(string(raw)) != ts.tokens.Management() || strings.TrimSpace(string(raw)) == oldMgmt {
		t.Errorf("per-user file after rotation: %q, %v", raw, err)
	}
	// The client reading the file follows; one holding the old token fails.
	if _, err := own.Jobs(ctx); err != nil {
		t.Errorf("per-user client after the management rotation: %v", err)
	}
	stale, err := api.NewClient(ts.srv.Addr(), api.WithToken(oldMgmt))
	if err != nil {
		t.Fatal(err)
	}
	defer stale.Close()
	if _, err := stale.Jobs(ctx); !errors.As(err, &se) || se.StatusCode != http.StatusForbidden {
		t.Errorf("old management token after rotation: %v, want 403", err)
	}
	if err := ts.tokens.Unpublish(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("per-user file after Unpublish: %v", err)
	}
	// Without the file the client sends nothing and the answer says why.
	if _, err := own.Jobs(ctx); !errors.As(err, &se) || se.StatusCode != http.StatusUnauthorized || !strings.Contains(se.ErrorResponse.Error, api.EnvToken) {
		t.Errorf("client without a token: %v, want 401 naming %s", err, api.EnvToken)
	}

	logs := ts.logs.String()
	for _, s := range []string{oldRead, oldMgmt, ts.tokens.Read(), ts.tokens.Management()} {
		if strings.Contains(logs, s) {
			t.Errorf("a token appears in the server's log")
		}
	}
	if !strings.Contains(logs, "token rotated") {
		t.Errorf("the rotation was not logged")
	}
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != want {
		t.Errorf("%s: mode %v, want %v", path, got, want)
	}
}

// TestTokensPersist: generated once, kept 0600, the same after a reopen,
// config tokens win and refuse rotation, a loose file is tightened.
func TestTokensPersist(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, TokenFileName)
	a, err := OpenTokens(TokensConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	checkMode(t, path, 0o600)
	if len(a.Management()) != 64 || len(a.Read()) != 64 || a.Management() == a.Read() {
		t.Fatalf("generated tokens %d and %d bytes long", len(a.Management()), len(a.Read()))
	}
	b, err := OpenTokens(TokensConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if b.Management() != a.Management() || b.Read() != a.Read() {
		t.Errorf("tokens changed across a reopen")
	}
	if err := b.Rotate(api.TokenTypeRead); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := OpenTokens(TokensConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	checkMode(t, path, 0o600)
	if c.Read() != b.Read() || c.Read() == a.Read() || c.Management() != a.Management() {
		t.Errorf("the rotated read token was not kept")
	}
	if err := c.Rotate("bogus"); err == nil {
		t.Errorf("rotating an unknown type succeeded")
	}

	const fromCfg = "config-management-token-0123456789"
	d, err := OpenTokens(TokensConfig{Path: path, Management: fromCfg})
	if err != nil {
		t.Fatal(err)
	}
	if d.Management() != fromCfg || d.Read() != b.Read() {
		t.Errorf("config token did not win over the file")
	}
	if tok := d.authenticate(fromCfg); tok == nil || tok.typ != api.TokenTypeManagement {
		t.Errorf("config token does not authenticate")
	}
	if tok := d.authenticate(a.Management()); tok != nil {
		t.Errorf("the generated management token works while the config sets one")
	}
	if err := d.Rotate(api.TokenTypeManagement); !errors.Is(err, ErrTokenFromConfig) {
		t.Errorf("rotating a config token: %v", err)
	}
	for _, bad := range []TokensConfig{
		{Management: "short"},
		{Read: "has a space in it, so no"},
		{Management: fromCfg, Read: fromCfg},
	} {
		if _, err := OpenTokens(bad); err == nil {
			t.Errorf("OpenTokens(%+v) accepted", bad)
		}
	}
	if err := os.WriteFile(path, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenTokens(TokensConfig{Path: path}); err == nil {
		t.Errorf("a corrupt token file was accepted")
	}
}

// TestUnixSocketNeedsNoToken: the socket's mode is the authentication, and
// the browser defences hold there too.
func TestUnixSocketNeedsNoToken(t *testing.T) {
	ts := startServer(t, nil)
	ctx := context.Background()
	if _, err := ts.client.Jobs(ctx); err != nil {
		t.Fatalf("unix socket without a token: %v", err)
	}
	if _, err := ts.client.Tokens(ctx); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("Tokens without ServerConfig.Tokens: %v, want 404", err)
	}
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", ts.sock)
		},
	}}
	defer hc.CloseIdleConnections()
	for _, c := range []struct {
		hdr    http.Header
		status int
	}{
		{http.Header{"Origin": {"http://evil.example"}, "Content-Type": {"application/json"}}, http.StatusForbidden},
		{http.Header{"Sec-Fetch-Site": {"cross-site"}, "Content-Type": {"application/json"}}, http.StatusForbidden},
		{http.Header{"Content-Type": {"text/plain"}}, http.StatusUnsupportedMediaType},
	} {
		req, _ := http.NewRequest(http.MethodPost, "http://x/v1/jobs", strings.NewReader(pwnJob))
		req.Header = c.hdr
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("unix socket, %v: %d, want %d", c.hdr, resp.StatusCode, c.status)
		}
	}
	if n := ts.be.calls.Load(); n != 1 {
		t.Errorf("backend called %d times, want 1 (the first Jobs)", n)
	}
}

// recordingConn records what a resolver reports.
type recordingConn struct {
	resolver.ClientConn
	states chan resolver.State
	errs   chan error
}

func (c recordingConn) UpdateState(s resolver.State) error {
	c.states <- s
	return nil
}

func (c recordingConn) ReportError(err error) {
	select {
	case c.errs <- err:
	default:
	}
}

// TestResolverWithTokenOverTCP: the resolver asks with its client's token,
// and the read token is enough for it; without a token it reports the 401.
func TestResolverWithTokenOverTCP(t *testing.T) {
	tokens, err := OpenTokens(TokensConfig{})
	if err != nil {
		t.Fatal(err)
	}
	inst := &api.PluginInstance{Type: "kv", Name: "main", AllocID: "a1", SocketPath: "/run/kv.sock", Active: true}
	srv, err := NewServer(ServerConfig{Addr: "127.0.0.1:0", Tokens: tokens, Backend: &registryFake{fakeBackend: newFakeBackend(),
		plugins: map[string]*api.Plugin{"kv/main": {Type: "kv", Name: "main", Active: inst, Instances: []*api.PluginInstance{inst}}}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	t.Setenv("XDG_CONFIG_HOME", shortDir(t)) // no per-user file
	t.Setenv("SUDO_USER", "")
	for _, c := range []struct {
		name string
		opts []api.ClientOption
	}{{"read token", []api.ClientOption{api.WithToken(tokens.Read())}}, {"no token", nil}} {
		client, err := api.NewClient(srv.Addr(), c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		cc := recordingConn{states: make(chan resolver.State, 4), errs: make(chan error, 1)}
		r, err := api.NewResolverBuilder(client).Build(resolver.Target{URL: url.URL{Scheme: api.ResolverScheme, Path: "/kv/main"}}, cc, resolver.BuildOptions{})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case st := <-cc.states:
			if c.opts == nil || len(st.Addresses) != 1 || st.Addresses[0].Addr != "unix:///run/kv.sock" {
				t.Errorf("%s: resolver state %+v", c.name, st)
			}
		case err := <-cc.errs:
			var se *api.StatusError
			if c.opts != nil || !errors.As(err, &se) || se.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s: resolver error %v", c.name, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s: the resolver reported nothing", c.name)
		}
		r.Close()
		client.Close()
	}
}
