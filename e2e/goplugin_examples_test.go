package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	plugin "github.com/hashicorp/go-plugin"
	basicshared "github.com/hashicorp/go-plugin/examples/basic/shared"
	kvshared "github.com/hashicorp/go-plugin/examples/grpc/shared"
	streamshared "github.com/hashicorp/go-plugin/examples/streaming/shared"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/internal/testbin"
)

// The consumers below are ours, not copies of go-plugin's example host
// programs: each does what its example's main.go does (same ClientConfig
// handshake and plugin set from the example's shared package, same Dispense
// name, same calls), with Reattach from our helper in place of Cmd.

// goPluginExample is one plugin of go-plugin v1.8's examples directory,
// hosted through its job file under examples/go-plugin/.
type goPluginExample struct {
	file      string // under examples/go-plugin/
	bin       string // testbin name
	typ, name string // registry type and name (the job's plugin block)
	// base is the example host program's own ClientConfig, minus Cmd.
	base *plugin.ClientConfig
	// dispense is the name its main.go dispenses.
	dispense string
	// use makes its main.go's calls on the dispensed value.
	use func(ctx context.Context, t *testing.T, raw any) error
}

var kvHandshake = kvshared.Handshake

func useKV(want string) func(ctx context.Context, t *testing.T, raw any) error {
	return func(_ context.Context, _ *testing.T, raw any) error {
		kv, ok := raw.(kvshared.KV)
		if !ok {
			return fmt.Errorf("dispensed %T, want shared.KV", raw)
		}
		if err := kv.Put("greeting", []byte("hello")); err != nil {
			return fmt.Errorf("Put: %w", err)
		}
		got, err := kv.Get("greeting")
		if err != nil {
			return fmt.Errorf("Get: %w", err)
		}
		if !strings.HasPrefix(string(got), "hello") || !strings.Contains(string(got), want) {
			return fmt.Errorf("Get = %q, want hello ... %q", got, want)
		}
		return nil
	}
}

func goPluginExamples() []goPluginExample {
	return []goPluginExample{
		{file: "basic.hcl", bin: "greeter", typ: "greeter", name: "greeter",
			base:     &plugin.ClientConfig{HandshakeConfig: basicHandshake, Plugins: map[string]plugin.Plugin{"greeter": &basicshared.GreeterPlugin{}}},
			dispense: "greeter",
			use: func(_ context.Context, _ *testing.T, raw any) error {
				if got := raw.(basicshared.Greeter).Greet(); got != "Hello!" {
					return fmt.Errorf("Greet = %q, want Hello!", got)
				}
				return nil
			}},
		{file: "grpc.hcl", bin: "plugin-go-grpc", typ: "kv", name: "kv_grpc",
			base:     &plugin.ClientConfig{HandshakeConfig: kvHandshake, Plugins: kvshared.PluginMap},
			dispense: kvshared.PluginGRPC, use: useKV("")},
		{file: "grpc-netrpc.hcl", bin: "plugin-go-netrpc", typ: "kv", name: "kv_netrpc",
			base:     &plugin.ClientConfig{HandshakeConfig: kvHandshake, Plugins: kvshared.PluginMap},
			dispense: kvshared.PluginNetRPC, use: useKV("")},
		{file: "negotiated-v2.hcl", bin: "kv-plugin", typ: "kv", name: "negotiated-v2",
			base: &plugin.ClientConfig{HandshakeConfig: kvHandshake,
				VersionedPlugins: map[int]plugin.PluginSet{2: {"kv": &kvshared.KVPlugin{}}, 3: {"kv": &kvshared.KVGRPCPlugin{}}}},
			dispense: "kv", use: useKV("plugin version 2")},
		{file: "negotiated-v3.hcl", bin: "kv-plugin", typ: "kv", name: "negotiated-v3",
			base: &plugin.ClientConfig{HandshakeConfig: kvHandshake,
				VersionedPlugins: map[int]plugin.PluginSet{2: {"kv": &kvshared.KVPlugin{}}, 3: {"kv": &kvshared.KVGRPCPlugin{}}}},
			dispense: "kv", use: useKV("plugin version 3")},
		{file: "streaming.hcl", bin: "streamer", typ: "streamer", name: "streamer",
			base:     &plugin.ClientConfig{HandshakeConfig: basicHandshake, Plugins: map[string]plugin.Plugin{"streamer": &streamshared.StreamerPlugin{}}},
			dispense: "streamer",
			use: func(ctx context.Context, t *testing.T, raw any) error {
				s := raw.(streamshared.Streamer)
				path := filepath.Join(t.TempDir(), "stream")
				if err := s.Configure(ctx, path, 10); err != nil {
					return fmt.Errorf("Configure: %w", err)
				}
				msg := []byte("Lorem ipsum dolor sit amet")
				// The example's server handler returns without a response
				// message, which grpc-go reports to the client as a
				// cardinality violation after the write is done: its own
				// host program, launching the plugin, gets the same error.
				if err := s.Write(ctx, msg); err != nil && !strings.Contains(err.Error(), "cardinality violation") {
					return fmt.Errorf("Write: %w", err)
				}
				got, err := s.Read(ctx)
				if err != nil || string(got) != string(msg) {
					return fmt.Errorf("Read = %q, %v; want %q", got, err, msg)
				}
				return nil
			}},
	}
}

var basicHandshake = plugin.HandshakeConfig{ProtocolVersion: 1, MagicCookieKey: "BASIC_PLUGIN", MagicCookieValue: "hello"}

// exampleJobFile is examples/go-plugin/FILE with the command replaced by
// the built binary.
func exampleJobFile(t *testing.T, file, bin string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "examples", "go-plugin", file))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^(\s*command\s*=\s*)"[^"]*"`)
	if !re.Match(b) {
		t.Fatalf("%s has no command line", file)
	}
	return re.ReplaceAllString(string(b), fmt.Sprintf("${1}%q", testbin.MustPath(t, bin)))
}

// TestGoPluginExamples hosts each plugin of go-plugin's examples directory
// unchanged, from its job file, and drives it as its own host program does,
// through go-plugin's Reattach and Dispense: first through a follower, then
// through a one-shot ReattachConfig whose client the consumer Kills. The
// plugin survives the Kill (same pid, still answering both consumers), and
// `job stop` stops it through go-plugin's controller in well under a second,
// without SIGKILL.
func TestGoPluginExamples(t *testing.T) {
	for _, ex := range goPluginExamples() {
		t.Run(strings.TrimSuffix(ex.file, ".hcl"), func(t *testing.T) { testGoPluginExample(t, ex) })
	}
}

func testGoPluginExample(t *testing.T, ex goPluginExample) {
	e := newEnv(t, "")
	a := e.start()
	src := exampleJobFile(t, ex.file, ex.bin)
	jobID := regexp.MustCompile(`job "([^"]+)"`).FindStringSubmatch(src)[1]
	ids := a.runJob(jobID, src)
	al := a.waitAlloc(ids[0], "plugin healthy", and(running("plugin"), hasEvents("plugin", api.TaskPluginHealthy, 1)))
	pid := lastPid(al, "plugin")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	f := api.FollowReattach(a.client, ex.typ, ex.name, ex.base)
	defer f.Close()
	raw, err := f.Dispense(ctx, ex.dispense)
	if err != nil {
		t.Fatalf("dispense through the follower: %v", err)
	}
	if err := ex.use(ctx, t, raw); err != nil {
		t.Fatalf("first consumer: %v", err)
	}

	// A program that reattached on its own, then Kills its client as its
	// main.go does on the way out (defer client.Kill()).
	rc, err := api.ReattachConfig(ctx, a.client, ex.typ, ex.name)
	if err != nil {
		t.Fatalf("reattach config: %v", err)
	}
	if rc.Pid != pid {
		t.Fatalf("reattach config names pid %d, the task runs as %d", rc.Pid, pid)
	}
	cfg, err := api.ReattachClientConfig(ex.base, rc)
	if err != nil {
		t.Fatal(err)
	}
	c := plugin.NewClient(cfg)
	rpc, err := c.Client()
	if err != nil {
		t.Fatalf("second consumer: reattach: %v", err)
	}
	raw2, err := rpc.Dispense(ex.dispense)
	if err != nil {
		t.Fatalf("second consumer: dispense: %v", err)
	}
	if err := ex.use(ctx, t, raw2); err != nil {
		t.Fatalf("second consumer: %v", err)
	}
	c.Kill()
	if !alive(pid) {
		t.Fatalf("the consumer's Kill stopped the hosted plugin (pid %d)", pid)
	}
	if err := ex.use(ctx, t, raw); err != nil {
		t.Fatalf("first consumer after the second one's Kill: %v", err)
	}

	// job stop: go-plugin's controller first, so no kill_timeout and no
	// SIGKILL although these plugins ignore SIGINT.
	start := time.Now()
	a.stopJob(jobID)
	al = a.waitAlloc(ids[0], "plugin stopped", taskDead("plugin"))
	took := time.Since(start)
	var msgs []string
	for _, ev := range events(al, "plugin", "") {
		msgs = append(msgs, ev.Type+": "+ev.DisplayMessage)
	}
	t.Logf("job stop took %s; events: %s", took, strings.Join(msgs, "; "))
	if took > time.Second {
		t.Errorf("job stop took %s, want well under a second", took)
	}
	if joined := strings.Join(msgs, "\n"); strings.Contains(joined, "Signal: 9") || strings.Contains(joined, "Exit Code: 137") {
		t.Errorf("plugin was SIGKILLed: %s", joined)
	}
}

// TestGoPluginPythonExample hosts go-plugin's Python gRPC plugin where
// Python has the modules it imports, and says which is missing otherwise.
func TestGoPluginPythonExample(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: go-plugin's examples/grpc/plugin-python needs it")
	}
	for _, mod := range []string{"grpc", "grpc_health.v1.health"} {
		if out, err := exec.Command(py, "-c", "import "+mod).CombinedOutput(); err != nil {
			pkg := map[string]string{"grpc": "grpcio (Debian: python3-grpcio)", "grpc_health.v1.health": "grpcio-health-checking"}[mod]
			t.Skipf("python3 cannot import %s, from %s: go-plugin's Python example needs it (%s)", mod, pkg, strings.TrimSpace(lastLine(string(out))))
		}
	}
	script, err := pythonPluginScript()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, "")
	a := e.start()
	src := exampleJobFile(t, "grpc-python.hcl", "pluginhost") // command replaced below
	src = regexp.MustCompile(`(?m)^(\s*command\s*=\s*)"[^"]*"`).ReplaceAllString(src, fmt.Sprintf("${1}%q", py))
	src = strings.Replace(src, "/path/to/go-plugin/examples/grpc/plugin-python/plugin.py", script, 1)
	ids := a.runJob("gp-grpc-python", src)
	a.waitAlloc(ids[0], "plugin healthy", and(running("plugin"), hasEvents("plugin", api.TaskPluginHealthy, 1)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := api.FollowReattach(a.client, "kv", "kv_python", &plugin.ClientConfig{HandshakeConfig: kvHandshake, Plugins: kvshared.PluginMap})
	defer f.Close()
	raw, err := f.Dispense(ctx, kvshared.PluginGRPC)
	if err != nil {
		t.Fatal(err)
	}
	if err := useKV("")(ctx, t, raw); err != nil {
		t.Fatal(err)
	}
}

// TestGoPluginTCPPlugin: a plugin that serves gRPC on a loopback TCP port, as
// go-plugin's Python example does (internal/tcpkv stands in for it where
// grpcio is missing), is hosted from the Python example's job file:
// registered at tcp://HOST:PORT, used through Reattach and Dispense, and
// stopped (it has no go-plugin controller: kill_signal does it).
func TestGoPluginTCPPlugin(t *testing.T) {
	e := newEnv(t, "")
	a := e.start()
	ids := a.runJob("gp-grpc-python", exampleJobFile(t, "grpc-python.hcl", "tcpkv"))
	a.waitAlloc(ids[0], "plugin healthy", and(running("plugin"), hasEvents("plugin", api.TaskPluginHealthy, 1)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec, err := a.client.PluginReattach(ctx, "kv", "kv_python")
	if err != nil || rec.Network != "tcp" || !strings.HasPrefix(rec.Addr, "127.0.0.1:") {
		t.Fatalf("reattach record %+v, %v; want a loopback TCP address", rec, err)
	}
	f := api.FollowReattach(a.client, "kv", "kv_python", &plugin.ClientConfig{HandshakeConfig: kvHandshake, Plugins: kvshared.PluginMap})
	defer f.Close()
	raw, err := f.Dispense(ctx, kvshared.PluginGRPC)
	if err != nil {
		t.Fatal(err)
	}
	if err := useKV("")(ctx, t, raw); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	a.stopJob("gp-grpc-python")
	a.waitAlloc(ids[0], "plugin stopped", taskDead("plugin"))
	t.Logf("job stop took %s", time.Since(start))
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// pythonPluginScript is plugin.py in the go-plugin module of this build.
func pythonPluginScript() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/hashicorp/go-plugin").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("go list: %w: %s", err, ee.Stderr)
		}
		return "", fmt.Errorf("go list: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "examples", "grpc", "plugin-python", "plugin.py"), nil
}

// TestGoPluginBidirectionalExample hosts go-plugin's bidirectional example
// (the plugin calls back into its host through the GRPCBroker) and drives it
// with examples/go-plugin/counter, a consumer program of our own that does
// what the example's main.go does, reattached. Each call is a process of its
// own that exits afterwards, as the example's is.
//
// go-plugin v1.8's plugin closes its broker for good when the first broker
// stream ends, so a consumer that used the broker and exited would leave
// every later consumer without callbacks. The agent restarts the instance
// at once when that happens (the consumer's broker lease ends) and says so;
// consumers that never use the broker (get) change nothing, and neither does
// a kill -9 of the agent (its own connection opens no broker stream).
// restartSignaled is the task event of a restart the agent asked for.
const restartSignaled = "Restart Signaled"

func TestGoPluginBidirectionalExample(t *testing.T) {
	e := newEnv(t, "")
	a := e.start()
	ids := a.runJob("gp-bidirectional", exampleJobFile(t, "bidirectional.hcl", "counter-go-grpc"))
	al := a.waitAlloc(ids[0], "plugin healthy", and(running("plugin"), hasEvents("plugin", api.TaskPluginHealthy, 1)))
	consumer := testbin.MustPath(t, "counter")
	counter := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, consumer, args...)
		cmd.Env = append(os.Environ(), "PLUGINHOST_ADDR="+e.addr())
		var stderr strings.Builder
		cmd.Stderr = &stderr // go-plugin's client logs there
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("counter %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
		}
		return strings.TrimSpace(string(out))
	}
	// restarted waits for the n-th restart by the agent, and the plugin's
	// healthy-th health event after it, and logs how long the plugin was
	// without a healthy instance.
	restarted := func(n, healthy int) {
		t.Helper()
		al := a.waitAlloc(ids[0], "restarted for the broker", and(running("plugin"),
			hasEvents("plugin", restartSignaled, n), hasEvents("plugin", api.TaskPluginHealthy, healthy)))
		sig := events(al, "plugin", restartSignaled)[n-1]
		if !strings.Contains(sig.DisplayMessage, "GRPCBroker was closed") {
			t.Fatalf("restart reason: %s", sig.DisplayMessage)
		}
		back := events(al, "plugin", api.TaskPluginHealthy)[healthy-1]
		t.Logf("restart %d: healthy again %s after the restart was signaled", n, time.Duration(back.Time-sig.Time))
	}

	counter("put", "n", "2")
	restarted(1, 2)
	// The next consumer's callbacks work: a new instance, a new broker.
	counter("put", "n", "3")
	restarted(2, 3)

	// kill -9 of the agent: the plugin's broker survives the agent's own
	// connection.
	al = a.waitAlloc(ids[0], "running", running("plugin"))
	pid := lastPid(al, "plugin")
	a.kill()
	a = e.start()
	a.waitAlloc(ids[0], "re-adopted", and(running("plugin"), hasEvents("plugin", "Reattached", 1), hasEvents("plugin", api.TaskPluginHealthy, 4)))
	if got := counter("get", "n"); got != "5" {
		t.Fatalf("counter get n = %q, want 5", got)
	}
	if al := a.waitAlloc(ids[0], "running", running("plugin")); lastPid(al, "plugin") != pid {
		t.Fatalf("a get (no broker use) restarted the plugin: pid %d, was %d", lastPid(al, "plugin"), pid)
	}
	counter("put", "n", "1")
	restarted(3, 5)
	if got := counter("get", "n"); got != "6" {
		t.Fatalf("counter get n = %q, want 6", got)
	}
}

// Issue 26 §7: counter put back to back. Each put ends its broker lease,
// and the agent restarts the plugin; a put made meanwhile failed with "no
// active instance: not found (HTTP 404)" (3 of 5). The agent now answers
// 503 while the declared plugin restarts, and never hands out the launch
// whose broker was closed; the client waits for the next instance. Five
// puts in a row all succeed and all count.
func TestCounterPutsBackToBack(t *testing.T) {
	e := newEnv(t, "")
	a := e.start()
	ids := a.runJob("gp-b2b", exampleJobFile(t, "bidirectional.hcl", "counter-go-grpc"))
	a.waitAlloc(ids[0], "plugin healthy", and(running("plugin"), hasEvents("plugin", api.TaskPluginHealthy, 1)))
	consumer := testbin.MustPath(t, "counter")
	counter := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, consumer, args...)
		cmd.Env = append(os.Environ(), "PLUGINHOST_ADDR="+e.addr())
		var stderr strings.Builder
		cmd.Stderr = &stderr // go-plugin's client logs there
		out, err := cmd.Output()
		if err != nil {
			return stderr.String(), err
		}
		return strings.TrimSpace(string(out)), err
	}
	key := "b2b" + strconv.Itoa(os.Getpid())
	for i := range 5 {
		if out, err := counter("put", key, "1"); err != nil {
			t.Fatalf("put %d: %v\n%s", i+1, err, out)
		}
	}
	if got, err := counter("get", key); err != nil || got != "5" {
		t.Fatalf("counter get = %q (%v), want 5", got, err)
	}
}
