package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/jobspec"
)

// shortDir returns a temp dir short enough for unix sockets: t.TempDir()
// embeds the test name and can exceed sun_path's 107 bytes.
func shortDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "phapi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

type testServer struct {
	srv    *Server
	be     *fakeBackend
	client *api.Client
	sock   string
}

// startServer runs a real server on a real unix socket; t.Cleanup stops it
// and checks that Serve returned cleanly.
func startServer(t testing.TB, mod func(*ServerConfig)) *testServer {
	t.Helper()
	be := newFakeBackend()
	sock := filepath.Join(shortDir(t), "api.sock")
	cfg := ServerConfig{
		Addr:    "unix://" + sock,
		Backend: be,
		Logger:  hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Debug, Output: testWriter{t}}),
	}
	if mod != nil {
		mod(&cfg)
	}
	srv, err := NewServer(cfg)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Serve did not return after its context ended")
		}
	})
	c, err := api.NewClient(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &testServer{srv: srv, be: be, client: c, sock: sock}
}

// testWriter sends server logs to the test log, so failures show them.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// rawDo sends a raw request over the server's socket and decodes the error
// body, for tests of what the Go client would never send.
func (ts *testServer) rawDo(t *testing.T, method, path, body string) (int, api.ErrorResponse) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", ts.sock)
		},
	}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequest(method, "http://x"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var er api.ErrorResponse
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: error Content-Type %q, want application/json", method, path, ct)
		}
		if err := json.Unmarshal(raw, &er); err != nil {
			t.Errorf("%s %s: error body is not JSON: %q", method, path, raw)
		}
	}
	return resp.StatusCode, er
}

func TestUnixSocketLifecycle(t *testing.T) {
	dir := shortDir(t)
	sock := filepath.Join(dir, "sub", "api.sock")

	// A stale socket, as a kill -9'd agent leaves behind.
	if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
		t.Fatal(err)
	}
	stale, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()
	if _, err := os.Lstat(sock); err != nil {
		t.Fatalf("stale socket should exist: %v", err)
	}

	srv, err := NewServer(ServerConfig{Addr: "unix://" + sock, Backend: newFakeBackend()})
	if err != nil {
		t.Fatalf("NewServer over a stale socket: %v", err)
	}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	fi, err := os.Lstat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Mode().Type() != fs.ModeSocket {
		t.Errorf("socket mode = %v, want socket 0600", fi.Mode())
	}

	// A second agent on the same socket must not steal it.
	if _, err := NewServer(ServerConfig{Addr: "unix://" + sock, Backend: newFakeBackend()}); !errors.Is(err, ErrAddrInUse) ||
		!strings.Contains(err.Error(), "another agent is listening") {
		t.Errorf("second server on a live socket: err = %v, want ErrAddrInUse, 'another agent is listening'", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	c, err := api.NewClient("unix://" + sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Self(ctx); err != nil {
		t.Fatalf("Self: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after cancel: %v", err)
	}
	if _, err := os.Lstat(sock); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket not removed on shutdown: %v", err)
	}
	// Shutdown is idempotent.
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
}

// TestLiveForeignListener: a socket something other than an agent (no
// lock) answers on is live, and is neither removed nor taken over.
func TestLiveForeignListener(t *testing.T) {
	sock := filepath.Join(shortDir(t), "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = NewServer(ServerConfig{Addr: "unix://" + sock, Backend: newFakeBackend()})
	if !errors.Is(err, ErrAddrInUse) || !strings.Contains(err.Error(), "another process is listening") {
		t.Fatalf("err = %v, want ErrAddrInUse from the probe", err)
	}
	if _, err := os.Lstat(sock); err != nil {
		t.Errorf("live socket removed: %v", err)
	}
	// Once it is gone (stale), the lock of the refused attempt is no
	// obstacle: it was released with the error.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	srv, err := NewServer(ServerConfig{Addr: "unix://" + sock, Backend: newFakeBackend()})
	if err != nil {
		t.Fatalf("NewServer over the now stale socket: %v", err)
	}
	srv.Shutdown(context.Background())
}

func TestRefusesToReplaceNonSocket(t *testing.T) {
	path := filepath.Join(shortDir(t), "not-a-socket")
	if err := os.WriteFile(path, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := NewServer(ServerConfig{Addr: path, Backend: newFakeBackend()})
	if err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("err = %v, want 'not a socket'", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "precious" {
		t.Errorf("file was touched: %q", b)
	}
}

func TestNewServerConfigErrors(t *testing.T) {
	if _, err := NewServer(ServerConfig{Addr: "/tmp/x.sock"}); err == nil {
		t.Error("nil Backend accepted")
	}
	long := "/tmp/" + strings.Repeat("d", 120) + "/api.sock"
	_, err := NewServer(ServerConfig{Addr: long, Backend: newFakeBackend()})
	if err == nil || !strings.Contains(err.Error(), "107-byte limit") {
		t.Errorf("long socket path: err = %v, want the sun_path limit named", err)
	}
	if _, err := NewServer(ServerConfig{Addr: "0.0.0.0:4646", Backend: newFakeBackend()}); err == nil {
		t.Error("non-loopback TCP accepted")
	}
}

func TestLoopbackTCP(t *testing.T) {
	if _, err := NewServer(ServerConfig{Addr: "127.0.0.1:0", Backend: newFakeBackend()}); err == nil ||
		!strings.Contains(err.Error(), "needs ServerConfig.Tokens") {
		t.Fatalf("TCP without tokens: err = %v, want it refused", err)
	}
	tokens, err := OpenTokens(TokensConfig{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(ServerConfig{Addr: "127.0.0.1:0", Backend: newFakeBackend(), Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	if strings.HasSuffix(srv.Addr(), ":0") {
		t.Fatalf("Addr() = %s, want the bound port", srv.Addr())
	}
	c, err := api.NewClient("http://"+srv.Addr(), api.WithToken(tokens.Read()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	self, err := c.Self(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if self.Addr != srv.Addr() || self.NodeName != "node1" {
		t.Errorf("Self = %+v", self)
	}
}

func TestParseAddr(t *testing.T) {
	cases := []struct {
		in, network, address, err string
	}{
		{"unix:///run/ph.sock", "unix", "/run/ph.sock", ""},
		{"/run/ph.sock", "unix", "/run/ph.sock", ""},
		{"127.0.0.1:4646", "tcp", "127.0.0.1:4646", ""},
		{"http://localhost:4646/", "tcp", "localhost:4646", ""},
		{"[::1]:4646", "tcp", "[::1]:4646", ""},
		{"", "", "", "empty"},
		{"unix://rel.sock", "", "", "not absolute"},
		{"10.0.0.1:4646", "", "", "loopback"},
		{"https://127.0.0.1:4646", "", "", "unsupported scheme"},
		{"127.0.0.1", "", "", "missing port"},
		{"127.0.0.1:", "", "", "missing port"},
		{"localhost: /", "", "", "not a number"},
		{"127.0.0.1:http", "", "", "not a number"},
		{"127.0.0.1:65536", "", "", "not a number"},
	}
	for _, c := range cases {
		a, err := api.ParseAddr(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseAddr(%q) err = %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || a.Network != c.network || a.Address != c.address {
			t.Errorf("ParseAddr(%q) = %+v, %v", c.in, a, err)
		}
		if b, err := api.ParseAddr(a.String()); err != nil || b != a {
			t.Errorf("round trip of %q: %+v, %v", c.in, b, err)
		}
	}
}

func TestClientEndpoints(t *testing.T) {
	ts := startServer(t, func(c *ServerConfig) {
		c.ParseJob = func(src []byte, filename string) (*jobspec.Job, error) {
			if strings.Contains(string(src), "bogus") {
				return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Unsupported argument",
					Detail:  `An argument named "bogus" is not expected here.`,
					Subject: &hcl.Range{Filename: filename, Start: hcl.Pos{Line: 3, Column: 5}}}}
			}
			return &jobspec.Job{ID: "fromsrc", Type: "service", SourcePath: filename}, nil
		}
	})
	ctx := context.Background()
	be, c := ts.be, ts.client

	jobs, err := c.Jobs(ctx)
	if err != nil || len(jobs) != 0 {
		t.Fatalf("Jobs on empty agent = %v, %v", jobs, err)
	}

	// Register from source: parsed server side.
	resp, err := c.RegisterJobSource(ctx, "demo.hcl", []byte(`job "fromsrc" {}`))
	if err != nil {
		t.Fatalf("RegisterJobSource: %v", err)
	}
	if resp.JobID != "fromsrc" || len(resp.AllocIDs) != 1 {
		t.Errorf("register response = %+v", resp)
	}
	if got := be.ran[0].SourcePath; got != "" {
		t.Errorf("submitted job kept SourcePath %q; it is not a file on the agent", got)
	}

	// A parse error comes back as 400 on Source with its location.
	_, err = c.RegisterJobSource(ctx, "bad.hcl", []byte("bogus = 1"))
	var se *api.StatusError
	if !errors.As(err, &se) || se.StatusCode != 400 || se.Field != "Source" {
		t.Fatalf("parse error: %v", err)
	}
	if len(se.Diagnostics) != 1 || se.Diagnostics[0].Range != "bad.hcl:3:5" ||
		se.Diagnostics[0].Summary != "Unsupported argument" {
		t.Errorf("diagnostics = %+v", se.Diagnostics)
	}

	// Register a parsed job; a backend refusal names its field.
	job := &jobspec.Job{ID: "parsed", Type: "batch", TaskGroups: []*jobspec.TaskGroup{{Name: "g",
		Tasks: []*jobspec.Task{{Name: "t", Driver: "raw_exec", Config: &jobspec.TaskConfig{Command: "/bin/true"}}}}}}
	if _, err := c.RegisterJob(ctx, job); err != nil {
		t.Fatalf("RegisterJob: %v", err)
	}
	job.ID = "reject"
	if _, err := c.RegisterJob(ctx, job); !errors.As(err, &se) || se.StatusCode != 400 || se.Field != "Job.ID" {
		t.Errorf("rejected job: %v", err)
	}

	jobs, err = c.Jobs(ctx)
	if err != nil || len(jobs) != 2 || jobs[0].ID != "fromsrc" || jobs[1].ID != "parsed" {
		t.Fatalf("Jobs = %v, %v", jobs, err)
	}
	j, err := c.Job(ctx, "parsed")
	if err != nil || j.Type != "batch" {
		t.Errorf("Job = %+v, %v", j, err)
	}
	if _, err := c.Job(ctx, "nope"); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("unknown job: err = %v, want ErrNotFound", err)
	}

	// Allocations, with prefix lookup.
	be.mu.Lock()
	be.allocs["aaaa1111"] = &api.Allocation{AllocListStub: api.AllocListStub{ID: "aaaa1111", JobID: "parsed", TaskGroup: "g", ClientStatus: "running"}, Tasks: []string{"t"}}
	be.allocs["aaaa2222"] = &api.Allocation{AllocListStub: api.AllocListStub{ID: "aaaa2222", JobID: "parsed", TaskGroup: "g", ClientStatus: "failed"}, Tasks: []string{"t"}}
	be.mu.Unlock()
	allocs, err := c.JobAllocations(ctx, "parsed")
	if err != nil || len(allocs) != 2 || allocs[1].ClientStatus != "failed" {
		t.Errorf("JobAllocations = %v, %v", allocs, err)
	}
	if _, err := c.JobAllocations(ctx, "nope"); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("allocations of unknown job: %v", err)
	}
	a, err := c.Allocation(ctx, "aaaa2")
	if err != nil || a.ID != "aaaa2222" {
		t.Errorf("Allocation by prefix = %+v, %v", a, err)
	}
	_, err = c.Allocation(ctx, "aaaa")
	if !errors.As(err, &se) || se.StatusCode != 400 || se.Field != "id" || len(se.Matches) != 2 {
		t.Errorf("ambiguous prefix: %v", err)
	}

	// Stop with purge reaches the backend.
	if err := c.StopJob(ctx, "parsed", true); err != nil {
		t.Fatalf("StopJob: %v", err)
	}
	if len(be.stopped) != 1 || be.stopped[0] != "parsed purge=true" {
		t.Errorf("stopped = %v", be.stopped)
	}
	if err := c.StopJob(ctx, "nope", false); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("stop unknown job: %v", err)
	}

	// Plugins.
	be.mu.Lock()
	be.plugins["mockcsi"] = &api.CSIPlugin{ID: "mockcsi", Provider: "mock.csi", Version: "1.0",
		ControllersHealthy: 1, ControllersExpected: 1, NodesHealthy: 1, NodesExpected: 1,
		ActiveNode: "aaaa1111",
		Nodes: map[string]*api.CSIInfo{"aaaa1111": {AllocID: "aaaa1111", Healthy: true,
			NodeInfo: &api.CSINodeInfo{ID: "node1", MaxVolumes: 10}}}}
	be.mu.Unlock()
	ps, err := c.Plugins(ctx)
	if err != nil || len(ps) != 1 || ps[0].Provider != "mock.csi" || ps[0].NodesHealthy != 1 {
		t.Errorf("Plugins = %v, %v", ps, err)
	}
	p, err := c.Plugin(ctx, "mockcsi")
	if err != nil || p.ActiveNode != "aaaa1111" || p.Nodes["aaaa1111"].NodeInfo.MaxVolumes != 10 {
		t.Errorf("Plugin = %+v, %v", p, err)
	}
	if _, err := c.Plugin(ctx, "nope"); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("unknown plugin: %v", err)
	}

	// Health follows readiness.
	if ok, err := c.Health(ctx); err != nil || ok {
		t.Errorf("Health before ready = %v, %v", ok, err)
	}
	be.setReady(true)
	if ok, err := c.Health(ctx); err != nil || !ok {
		t.Errorf("Health after ready = %v, %v", ok, err)
	}
}

func TestBadInput(t *testing.T) {
	ts := startServer(t, func(c *ServerConfig) { c.MaxBodyBytes = 1024 })
	ts.be.mu.Lock()
	ts.be.allocs["a1"] = &api.Allocation{AllocListStub: api.AllocListStub{ID: "a1"}, Tasks: []string{"t1", "t2"}}
	ts.be.mu.Unlock()
	cases := []struct {
		method, path, body string
		status             int
		field              string
	}{
		{"POST", "/v1/jobs", "", 400, "body"},
		{"POST", "/v1/jobs", "{", 400, "body"},
		{"POST", "/v1/jobs", `{"Source": 5}`, 400, "Source"},
		{"POST", "/v1/jobs", `{"Sauce": "x"}`, 400, "Sauce"},
		{"POST", "/v1/jobs", `{}`, 400, "Source"},
		{"POST", "/v1/jobs", `{} {}`, 400, "body"},
		{"POST", "/v1/jobs", `{"Source": "job {}", "Job": {"ID": "x"}}`, 400, "Job"},
		{"POST", "/v1/jobs", `{"Job": {"ID": ""}}`, 400, "Job.ID"},
		{"POST", "/v1/jobs", `{"Job": {"ID": "x"}}`, 400, "Job.TaskGroups"},
		{"POST", "/v1/jobs", `{"Job": {"ID": "x", "TaskGroups": [null]}}`, 400, "Job.TaskGroups[0]"},
		{"POST", "/v1/jobs", `{"Job": {"ID": "x", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t"}]}]}}`, 400, "Job.TaskGroups[0].Tasks[0].Driver"},
		{"POST", "/v1/jobs", `{"Job": {"ID": "x", "TaskGroups": [{"Name": "g", "Count": "two"}]}}`, 400, "Job.TaskGroups.Count"},
		{"POST", "/v1/jobs", `{"Source": "` + strings.Repeat("x", 2000) + `"}`, 413, "body"},
		// No parser in this build (or a real parse error): 400 on Source.
		{"POST", "/v1/jobs", `{"Source": "job \"x\" {}"}`, 400, "Source"},
		{"PUT", "/v1/jobs", "", 405, "method"},
		{"DELETE", "/v1/job/x?purge=sometimes", "", 400, "purge"},
		{"GET", "/v1/job/" + strings.Repeat("x", 300), "", 400, "id"},
		{"GET", "/v1/job/a%01b", "", 400, "id"},
		{"GET", "/v1/job/nope", "", 404, ""},
		{"GET", "/v1/allocation/zzz", "", 404, ""},
		{"GET", "/v1/client/fs/logs/a1?task=t1&type=stdlog", "", 400, "type"},
		{"GET", "/v1/client/fs/logs/a1?task=t1&follow=perhaps", "", 400, "follow"},
		{"GET", "/v1/client/fs/logs/a1", "", 400, "task"},
		{"GET", "/v1/client/fs/logs/a1?task=t9", "", 404, "task"},
		{"GET", "/v1/client/fs/logs/zzz?task=t1", "", 404, ""},
		{"GET", "/v1/plugins?type=a%2Fb", "", 400, "type"},
		{"GET", "/v1/plugins?type=csi-node", "", 400, "type"},
		{"GET", "/v1/event/stream?topic=Weather", "", 400, "topic"},
		{"GET", "/v1/nothing/here", "", 404, ""},
	}
	for _, c := range cases {
		status, er := ts.rawDo(t, c.method, c.path, c.body)
		if status != c.status || er.Field != c.field || er.Error == "" {
			t.Errorf("%s %s %.40q: status %d field %q (%q); want %d field %q",
				c.method, c.path, c.body, status, er.Field, er.Error, c.status, c.field)
		}
	}
	if len(ts.be.ran) != 0 {
		t.Errorf("bad input reached the backend: %v", ts.be.ran)
	}
}

func TestPanickingBackend(t *testing.T) {
	ts := startServer(t, nil)
	ts.be.mu.Lock()
	ts.be.panicIn = "Jobs"
	ts.be.mu.Unlock()
	ctx := context.Background()
	_, err := ts.client.Jobs(ctx)
	var se *api.StatusError
	if !errors.As(err, &se) || se.StatusCode != 500 || !strings.Contains(se.ErrorResponse.Error, "boom") {
		t.Fatalf("panicking handler: err = %v, want 500 naming the panic", err)
	}
	// The server is still up and other endpoints answer.
	if _, err := ts.client.Self(ctx); err != nil {
		t.Fatalf("after panic: %v", err)
	}
	ts.be.mu.Lock()
	ts.be.panicIn = ""
	ts.be.mu.Unlock()
	if _, err := ts.client.Jobs(ctx); err != nil {
		t.Fatalf("Jobs after panic cleared: %v", err)
	}
}

func TestEventStreamOrderAndEnd(t *testing.T) {
	ts := startServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sctx, scancel := context.WithCancel(ctx)
	stream, err := ts.client.Events(sctx)
	if err != nil {
		t.Fatal(err)
	}
	<-ts.be.subd // Events returned, so the subscription must already exist.
	const n = 200
	go func() {
		for i := 1; i <= n; i++ {
			ts.be.publish(&api.Event{Topic: api.TopicTask, Type: "TaskEvent", Key: "a1", Index: uint64(i),
				Payload: api.EventPayload{AllocID: "a1", TaskName: "t", TaskEvent: &api.TaskEvent{Type: api.TaskStarted}}})
		}
	}()
	for i := 1; i <= n; i++ {
		ev, err := stream.Next(sctx)
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if ev.Index != uint64(i) || ev.Payload.TaskEvent == nil || ev.Payload.TaskEvent.Type != api.TaskStarted {
			t.Fatalf("event %d = %+v", i, ev)
		}
	}
	// The client goes away: the server must end the backend subscription.
	scancel()
	if _, err := stream.Next(sctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Next after cancel: %v", err)
	}
	stream.Close()
	select {
	case <-ts.be.unsub:
	case <-ctx.Done():
		t.Fatal("backend subscription outlived its client")
	}
}

func TestEventStreamTopicFilterHeartbeatAndBackendClose(t *testing.T) {
	ts := startServer(t, func(c *ServerConfig) { c.Heartbeat = 5 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := ts.client.Events(ctx, api.TopicPlugin)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	<-ts.be.subd
	ts.be.publish(&api.Event{Topic: api.TopicTask, Index: 1})
	ts.be.publish(&api.Event{Topic: api.TopicPlugin, Index: 2, Payload: api.EventPayload{Plugin: &api.CSIInfo{PluginID: "p", Healthy: true}}})
	ev, err := stream.Next(ctx)
	if err != nil || ev.Index != 2 || !ev.Payload.Plugin.Healthy {
		t.Fatalf("filtered stream: %+v, %v", ev, err)
	}
	// Heartbeats flow in between but are not events; the backend closing
	// its channel ends the stream with EOF.
	ts.be.closeSubs()
	if ev, err := stream.Next(ctx); err != io.EOF {
		t.Fatalf("after backend close: %+v, %v; want EOF", ev, err)
	}
}

func TestEventStreamEndsOnShutdown(t *testing.T) {
	ts := startServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := ts.client.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	<-ts.be.subd
	shut := make(chan error, 1)
	go func() { shut <- ts.srv.Shutdown(ctx) }()
	if _, err := stream.Next(ctx); err == nil {
		t.Fatal("stream still delivering after shutdown")
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown with an open stream: %v", err)
	}
}

func TestAllocLogs(t *testing.T) {
	ts := startServer(t, nil)
	be, c := ts.be, ts.client
	be.mu.Lock()
	be.allocs["a1"] = &api.Allocation{AllocListStub: api.AllocListStub{ID: "a1"}, Tasks: []string{"web"}}
	be.logs["a1/web/stdout"] = "out line\n"
	be.logs["a1/web/stderr"] = "err line\n"
	be.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var out strings.Builder
	if err := c.AllocLogs(ctx, "a1", "", false, false, &out); err != nil || out.String() != "out line\n" {
		t.Errorf("stdout (task implied) = %q, %v", out.String(), err)
	}
	out.Reset()
	if err := c.AllocLogs(ctx, "a1", "web", true, false, &out); err != nil || out.String() != "err line\n" {
		t.Errorf("stderr = %q, %v", out.String(), err)
	}

	// Follow: each piece must arrive before the next is written, which
	// only holds if the server flushes per write.
	fctx, fcancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- c.AllocLogs(fctx, "a1", "web", false, true, pw)
		pw.Close()
	}()
	buf := make([]byte, 64)
	readExactly := func(want string) {
		t.Helper()
		got := ""
		for len(got) < len(want) {
			n, err := pr.Read(buf)
			if err != nil {
				t.Fatalf("read followed log: %v (got %q)", err, got)
			}
			got += string(buf[:n])
		}
		if got != want {
			t.Fatalf("followed log = %q, want %q", got, want)
		}
	}
	readExactly("out line\n")
	for i := range 3 {
		line := fmt.Sprintf("more %d\n", i)
		be.follow <- line
		readExactly(line)
	}
	fcancel()
	// The reader keeps draining so the client is never blocked on the pipe.
	go io.Copy(io.Discard, pr)
	if err := <-done; err != nil {
		t.Errorf("followed logs after cancel: %v", err)
	}

	// An error after the stream started reaches the client via the trailer.
	be.mu.Lock()
	be.logErr = errors.New("log file vanished")
	be.mu.Unlock()
	out.Reset()
	err := c.AllocLogs(ctx, "a1", "web", false, false, &out)
	if err == nil || !strings.Contains(err.Error(), "log file vanished") || out.String() != "out line\n" {
		t.Errorf("mid-stream error: %q, %v", out.String(), err)
	}
}

// TestRegisterWithJobspecParser runs the default parser: what the agent
// will run in production.
func TestRegisterWithJobspecParser(t *testing.T) {
	ts := startServer(t, nil)
	ctx := context.Background()
	src, err := os.ReadFile("../../examples/sleep.hcl")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := ts.client.RegisterJobSource(ctx, "sleep.hcl", src)
	if err != nil {
		t.Fatalf("register examples/sleep.hcl: %v", err)
	}
	if resp.JobID != "sleep" || len(ts.be.ran) != 1 || ts.be.ran[0].TaskGroups[0].Count != 2 {
		t.Errorf("registered %+v, backend got %+v", resp, ts.be.ran)
	}
	_, err = ts.client.RegisterJobSource(ctx, "bad.hcl", []byte("job \"x\" {\n  typo = 1\n}\n"))
	var se *api.StatusError
	if !errors.As(err, &se) || se.StatusCode != 400 || se.Field != "Source" {
		t.Fatalf("bad job: %v", err)
	}
	var found bool
	for _, d := range se.Diagnostics {
		if d.Range == "bad.hcl:2:3" && d.Summary == "Unsupported argument" {
			found = true
		}
	}
	if !found || !strings.Contains(se.ErrorResponse.Error, "bad.hcl:2:3") {
		t.Errorf("diagnostics %+v / error %q lack bad.hcl:2:3", se.Diagnostics, se.ErrorResponse.Error)
	}
}

// TestEventStreamHeartbeat reads the raw stream: an idle subscription must
// carry "{}" lines, or neither end could tell a quiet agent from a dead one.
func TestEventStreamHeartbeat(t *testing.T) {
	ts := startServer(t, func(c *ServerConfig) { c.Heartbeat = 10 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "unix", ts.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /v1/event/stream HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	var got strings.Builder
	buf := make([]byte, 512)
	for !strings.Contains(got.String(), "{}\n") {
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("read stream: %v (got %q)", err, got.String())
		}
		got.Write(buf[:n])
	}
	if !strings.HasPrefix(got.String(), "HTTP/1.1 200 OK") || !strings.Contains(got.String(), "application/x-ndjson") {
		t.Errorf("stream head: %q", got.String())
	}
}

// TestEventStreamNoticesAndIndex: a stream filtered to one topic still gets
// the notices about itself (disconnected, events lost), and a bad index is
// a 400 naming the parameter.
func TestEventStreamNoticesAndIndex(t *testing.T) {
	ts := startServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := ts.client.EventsFrom(ctx, 0, api.TopicPlugin); err != nil {
		t.Fatal(err)
	}
	<-ts.be.subd
	stream, err := ts.client.EventsFrom(ctx, 5, api.TopicPlugin)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	<-ts.be.subd
	ts.be.publish(&api.Event{Topic: api.TopicAgent, Type: "SubscriberDropped", Index: 9, Payload: api.EventPayload{Message: "behind"}})
	if ev, err := stream.Next(ctx); err != nil || ev.Type != "SubscriberDropped" {
		t.Fatalf("notice through a Plugin-only stream: %+v, %v", ev, err)
	}
	if code, e := ts.rawDo(t, http.MethodGet, "/v1/event/stream?index=x", ""); code != http.StatusBadRequest || e.Field != "index" {
		t.Fatalf("bad index: %d %+v", code, e)
	}
}
