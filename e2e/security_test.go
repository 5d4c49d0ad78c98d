package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/apiserver"
)

// tcpAgent is an agent on loopback TCP whose user's home is a directory of
// the test's, so that the token it leaves for that user is the test's to
// find.
type tcpAgent struct {
	*agentProc
	addr string
	// home is the agent's user's HOME and XDG_CONFIG_HOME parent.
	home string
}

// userEnv is the environment of a process of the agent's user (home) or of
// another user (another home), with no token or address inherited.
func userEnv(home string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME", "XDG_CONFIG_HOME", "SUDO_USER", api.EnvAddr, api.EnvToken:
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))
	return append(env, extra...)
}

// startTCP starts an agent on 127.0.0.1:0 with enable_debug, as the user
// whose home is <root>/home, and waits until it is ready.
func startTCP(t *testing.T, e *env) *tcpAgent {
	t.Helper()
	home := filepath.Join(e.root, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("data_dir = %q\naddr = \"127.0.0.1:0\"\nlog_level = \"debug\"\nnode_name = \"e2e\"\nenable_debug = true\ncgroup_parent = %q\n",
		e.dataDir, e.cgroupParent)
	if err := os.WriteFile(e.cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(e.bin, "agent", "-config", e.cfgPath)
	cmd.Dir = e.root
	cmd.Env = userEnv(home)
	a := &agentProc{t: t, cmd: cmd, exited: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = lockedWriter{a}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrCh := make(chan string, 1)
	go func() {
		// Owned by the agent process: ends when its stdout closes.
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			_, _ = lockedWriter{a}.Write([]byte(line + "\n"))
			if _, addr, ok := strings.Cut(line, "export "+api.EnvAddr+"="); ok {
				addrCh <- strings.TrimSpace(addr)
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		a.exitErr = cmd.Wait()
		close(a.exited)
	}()
	var addr string
	select {
	case addr = <-addrCh:
	case <-a.exited:
		t.Fatalf("agent exited during start-up (%v):\n%s", a.exitErr, a.output())
	case <-time.After(startTimeout):
		_ = cmd.Process.Kill()
		t.Fatalf("agent did not print its address within %s:\n%s", startTimeout, a.output())
	}
	// The test process reads the agent's user's file by path: its own
	// HOME is not that user's.
	tokPath := filepath.Join(home, ".config", "pluginhost", "tokens", addr)
	secret, err := os.ReadFile(tokPath)
	if err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("the agent left no token for its user: %v\n%s", err, a.output())
	}
	a.client, err = api.NewClient(addr, api.WithToken(string(secret)))
	if err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	e.agents = append(e.agents, a)
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := a.waitReady(ctx); err != nil {
		t.Fatalf("agent not ready: %v\n%s", err, a.output())
	}
	return &tcpAgent{agentProc: a, addr: addr, home: home}
}

// cliAs runs the CLI as the user whose home is home, against addr.
func cliAs(t *testing.T, bin, home, addr string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = userEnv(home, api.EnvAddr+"="+addr)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := cliResult{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("pluginhost %v: %v", args, err)
	}
	return res
}

// TestTCPLetsInOnlyWhoBelongs is the report against a real agent on
// real loopback TCP: the curl a web page can send is refused and runs
// nothing, and so is every variation without the right token; the agent's
// own user's CLI works without a flag and another user's does not; the
// read token scrapes metrics and is refused pprof; a rotation takes effect
// at once; a clean stop removes the per-user token file.
func TestTCPLetsInOnlyWhoBelongs(t *testing.T) {
	e := newEnv(t, "")
	a := startTCP(t, e)
	port := a.addr[strings.LastIndex(a.addr, ":")+1:]
	tokPath := filepath.Join(a.home, ".config", "pluginhost", "tokens", a.addr)
	for p, want := range map[string]os.FileMode{tokPath: 0o600, filepath.Dir(tokPath): 0o700,
		filepath.Join(e.dataDir, apiserver.TokenFileName): 0o600} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v, %v; want mode %v", p, st.Mode(), err, want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	toks, err := a.client.Tokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mgmt, read := toks.Tokens[0].SecretID, toks.Tokens[1].SecretID

	pwned := filepath.Join(e.root, "pwned")
	jobHCL := fmt.Sprintf(`job "pwn" {
  type = "batch"
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "id > %s"]
      }
    }
  }
}
`, pwned)
	src, _ := json.Marshal(map[string]string{"Source": jobHCL})
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	send := func(hdr map[string]string, host string) (int, api.ErrorResponse, http.Header) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+a.addr+"/v1/jobs", bytes.NewReader(src))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var er api.ErrorResponse
		raw, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(raw, &er); err != nil {
			t.Errorf("answer is not JSON: %q", raw)
		}
		return resp.StatusCode, er, resp.Header
	}
	for _, c := range []struct {
		name   string
		hdr    map[string]string
		host   string
		status int
		field  string
	}{
		// The curl, byte for byte in its headers.
		{"the issue's curl", map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"},
			"evil.example:" + port, http.StatusForbidden, "Host"},
		{"no token", map[string]string{"Content-Type": "application/json"}, "", http.StatusUnauthorized, api.HeaderToken},
		{"wrong token", map[string]string{"Content-Type": "application/json", api.HeaderToken: read + "x"}, "", http.StatusForbidden, api.HeaderToken},
		{"read token", map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + read}, "", http.StatusForbidden, api.HeaderToken},
		{"foreign Host", map[string]string{"Content-Type": "application/json", api.HeaderToken: mgmt}, "evil.example:" + port, http.StatusForbidden, "Host"},
		// A page served from another local port is another origin, even
		// with a stolen token; the agent's own page (same origin) is the
		// web UI and passes (ui_test.go).
		{"Origin", map[string]string{"Content-Type": "application/json", api.HeaderToken: mgmt, "Origin": "http://127.0.0.1:1"}, "", http.StatusForbidden, "Origin"},
		{"text/plain", map[string]string{"Content-Type": "text/plain", api.HeaderToken: mgmt}, "", http.StatusUnsupportedMediaType, "Content-Type"},
	} {
		status, er, hdr := send(c.hdr, c.host)
		if status != c.status || er.Field != c.field {
			t.Errorf("%s: %d %q (%s), want %d naming %q", c.name, status, er.Field, er.Error, c.status, c.field)
		}
		for k := range hdr {
			if strings.HasPrefix(k, "Access-Control-") {
				t.Errorf("%s: CORS header %s", c.name, k)
			}
		}
	}
	if jobs, err := a.client.Jobs(ctx); err != nil || len(jobs) != 0 {
		t.Fatalf("after the refusals the agent has jobs %v (%v)", jobs, err)
	}
	if _, err := os.Stat(pwned); !os.IsNotExist(err) {
		t.Fatalf("%s exists: a refused job ran", pwned)
	}

	// The agent's own user: no flag, no variable.
	if r := cliAs(t, e.bin, a.home, a.addr, "job", "status"); r.code != 0 || !strings.Contains(r.stdout, "No jobs") {
		t.Errorf("the agent's user's CLI over TCP: %+v", r)
	}
	// Another user (another home) gets 401 and the hint.
	other := filepath.Join(e.root, "other")
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if r := cliAs(t, e.bin, other, a.addr, "job", "status"); r.code != 1 || !strings.Contains(r.stderr, "HTTP 401") ||
		!strings.Contains(r.stderr, api.EnvToken) {
		t.Errorf("another user's CLI: %+v", r)
	}
	// The same job, sent properly by the agent's user, runs: the check
	// above could have failed.
	jobFile := filepath.Join(e.root, "pwn.hcl")
	writeFile(t, jobFile, jobHCL)
	if r := cliAs(t, e.bin, a.home, a.addr, "job", "run", "-detach", jobFile); r.code != 0 {
		t.Fatalf("job run by the agent's user: %+v", r)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(pwned); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the accepted job never wrote %s", pwned)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Prometheus's way: the read token as a bearer token.
	get := func(path, tok string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+a.addr+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	if code := get("/v1/metrics?format=prometheus", read); code != http.StatusOK {
		t.Errorf("read token metrics: %d", code)
	}
	if code := get("/debug/pprof/cmdline", read); code != http.StatusForbidden {
		t.Errorf("read token pprof: %d, want 403", code)
	}
	if code := get("/debug/pprof/cmdline", mgmt); code != http.StatusOK {
		t.Errorf("management token pprof: %d", code)
	}

	// A rotation by the agent's user: the old read token fails at once.
	if r := cliAs(t, e.bin, a.home, a.addr, "operator", "token", "-rotate", "read"); r.code != 0 || strings.Contains(r.stdout, read) {
		t.Fatalf("operator token -rotate read: %+v", r)
	}
	if code := get("/v1/jobs", read); code != http.StatusForbidden {
		t.Errorf("old read token after rotation: %d, want 403", code)
	}
	// No token in the agent's log.
	for _, s := range []string{mgmt, read} {
		if strings.Contains(a.output(), s) {
			t.Errorf("a token appears in the agent's output")
		}
	}

	// A clean stop removes the per-user file.
	if err := a.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.exited:
	case <-ctx.Done():
		t.Fatal("agent did not stop on SIGINT")
	}
	if _, err := os.Stat(tokPath); !os.IsNotExist(err) {
		t.Errorf("per-user token file after a clean stop: %v", err)
	}
}

// TestPluginSocketModes: every plugin socket the agent's tasks bind (a
// go_plugin CSI plugin's go-plugin socket, a raw_exec CSI driver's
// CSI_ENDPOINT) is 0600, and every directory from the socket root down is
// 0700, so no other local user reaches a plugin.
func TestPluginSocketModes(t *testing.T) {
	e := newEnv(t, csiConfig)
	a := e.start()
	w := a.watchPlugins()
	gp := a.runJob("gp", jobHCL("gp", restartPolicy, csiTask(t, "go_plugin", "p", e.markerFor("gp"), "gp", "30s")))
	rx := a.runJob("rx", jobHCL("rx", restartPolicy, csiTask(t, "raw_exec", "p", e.markerFor("rx"), "rx", "30s")))
	w.waitHealthy(gp[0])
	w.waitHealthy(rx[0])

	// The registry says where each plugin's socket is: <root>/<alloc>/t0/...
	// (root is <data_dir>/sockets or its short fallback).
	list, err := a.client.RegisteredPlugins(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	allocDirs := map[string]bool{}
	for _, p := range list {
		if p.SocketPath == "" {
			continue
		}
		for _, id := range []string{gp[0], rx[0]} {
			if i := strings.Index(p.SocketPath, "/"+id+"/"); i >= 0 {
				allocDirs[p.SocketPath[:i+1+len(id)]] = true
			}
		}
	}
	if len(allocDirs) != 2 {
		t.Fatalf("socket dirs of the two allocations: %v (registry %+v)", allocDirs, list)
	}
	// The root and each allocation's directory are passed through (0711:
	// a task with a user of its own reaches its socket, and no one lists
	// them); each task's directory below is 0700.
	sockets := 0
	for dir := range allocDirs {
		for _, d := range []string{filepath.Dir(dir), dir} {
			if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o711 {
				t.Errorf("socket directory %s: %v, %v; want 0711", d, fi.Mode(), err)
			}
		}
		walkSockets(t, dir, &sockets)
	}
	if sockets < 2 {
		t.Fatalf("found %d sockets under %v, want the two plugins'", sockets, allocDirs)
	}
}

// walkSockets checks the modes of the directories and sockets under root.
func walkSockets(t *testing.T, root string, sockets *int) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir() && p == root:
		case d.IsDir():
			if fi.Mode().Perm() != 0o700 {
				t.Errorf("socket directory %s: mode %v, want 0700", p, fi.Mode().Perm())
			}
		case fi.Mode().Type() == os.ModeSocket:
			*sockets++
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("socket %s: mode %v, want 0600", p, fi.Mode().Perm())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestVolumeSecretsNeverShown: a volume's secrets reach the plugin but no
// answer (status, JSON), no event and no line of the agent's output, the
// plugin's followed log included, through create, snapshot and delete.
func TestVolumeSecretsNeverShown(t *testing.T) {
	const secret = "s3cret-value-9f8e7d6c5b4a"
	e := newEnv(t, csiConfig)
	a := e.start()
	startVolPlugin(t, e, a, "go_plugin", "sec", nil)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	es, err := a.client.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var events bytes.Buffer
	done := make(chan struct{})
	go func() {
		// Owned by this test: ends when es is closed below.
		defer close(done)
		for {
			ev, err := es.Next(ctx)
			if err != nil {
				return
			}
			b, _ := json.Marshal(ev)
			events.Write(append(b, '\n'))
		}
	}()

	spec := volSpec("secvol", "sec", "1MiB", "10MiB") + "secrets {\n  password = \"" + secret + "\"\n}\n"
	specPath := filepath.Join(e.root, "secvol.hcl")
	writeFile(t, specPath, spec)
	e.mustCLI(t, nil, "volume", "create", specPath)
	a.waitVolume("secvol", "ready", volReady)
	answers := []string{
		e.mustCLI(t, []string{"secvol"}, "volume", "status", "-json", "secvol").stdout,
		e.mustCLI(t, []string{"secvol"}, "volume", "status", "-verbose", "secvol").stdout,
		e.mustCLI(t, nil, "volume", "snapshot", "create", "-json", "secvol").stdout,
	}
	var v api.CSIVolume
	if err := json.Unmarshal([]byte(answers[0]), &v); err != nil || v.Secrets["password"] != "[REDACTED]" {
		t.Errorf("volume status -json: secrets %v (%v), want the key with a redacted value", v.Secrets, err)
	}
	e.mustCLI(t, nil, "volume", "delete", "secvol")
	a.waitVolume("secvol", "gone", volGone)

	cancel()
	_ = es.Close()
	<-done
	if events.Len() == 0 {
		t.Fatal("no events seen")
	}
	for what, text := range map[string]string{"status -json": answers[0], "status -verbose": answers[1],
		"snapshot create": answers[2], "events": events.String(), "agent output": a.output()} {
		if strings.Contains(text, secret) {
			t.Errorf("the volume's secret appears in the %s", what)
		}
	}
}
