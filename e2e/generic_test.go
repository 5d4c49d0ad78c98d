package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	plugin "github.com/hashicorp/go-plugin"
	kvexample "github.com/hashicorp/go-plugin/examples/grpc/proto"
	kvshared "github.com/hashicorp/go-plugin/examples/grpc/shared"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/internal/testbin"
	"github.com/pluginhost/pluginhost/plugins/kv/kvpb"
)

// goPluginExampleJob runs go-plugin's own gRPC example plugin, a binary
// nobody here wrote, as a pluginhost task.
func goPluginExampleJob(t *testing.T, binary string) string {
	return fmt.Sprintf(`job "gpkv" {
  group "g" {
%s
    task "kv" {
      driver = "go_plugin"
      config {
        command = %q
        handshake {
          magic_cookie_key   = "BASIC_PLUGIN"
          magic_cookie_value = "hello"
          protocol_versions  = [1]
        }
        plugin {
          type = "kv"
          name = "kv_grpc"
        }
      }
    }
  }
}
`, restartPolicy, testbin.MustPath(t, binary))
}

// dialPlugin connects to pluginhost:///TYPE/NAME through the resolver.
func dialPlugin(t testing.TB, client *api.Client, target string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(target,
		grpc.WithResolvers(api.NewResolverBuilder(client)),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.WaitForReady(true)))
	if err != nil {
		t.Fatalf("dial %s: %v", target, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// TestGoPluginExampleRunsUnchanged: go-plugin's gRPC example runs as a
// task with the handshake its job names, becomes healthy through go-plugin's
// health service, is registered as kv/kv_grpc, is listed by `plugin status`,
// answers its own KV service through the resolver, and is re-adopted (same
// process, still registered, still answering) after kill -9 of the agent.
func TestGoPluginExampleRunsUnchanged(t *testing.T) {
	e := newEnv(t, "")
	a := e.start()
	ids := a.runJob("gpkv", goPluginExampleJob(t, "plugin-go-grpc"))
	al := a.waitAlloc(ids[0], "plugin healthy", and(running("kv"), hasEvents("kv", api.TaskPluginHealthy, 1)))
	pid := lastPid(al, "kv")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := a.client.RegisteredPlugin(ctx, "kv", "kv_grpc")
	if err != nil {
		t.Fatalf("registry: %v", err)
	}
	if p.Active == nil || p.Active.AllocID != ids[0] || !isSocket(p.Active.SocketPath) {
		t.Fatalf("active instance %+v, want allocation %s with a live socket", p.Active, ids[0])
	}
	r := e.cli("plugin", "status")
	if r.code != 0 || !strings.Contains(r.stdout, "kv_grpc") || !strings.Contains(r.stdout, short(ids[0])) {
		t.Fatalf("plugin status (%d):\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = e.cli("plugin", "status", "kv/kv_grpc")
	if r.code != 0 || !strings.Contains(r.stdout, "pluginhost:///kv/kv_grpc") {
		t.Fatalf("plugin status kv/kv_grpc (%d):\n%s%s", r.code, r.stdout, r.stderr)
	}

	kv := kvexample.NewKVClient(dialPlugin(t, a.client, "pluginhost:///kv/kv_grpc"))
	if _, err := kv.Put(ctx, &kvexample.PutRequest{Key: "greeting", Value: []byte("hello")}); err != nil {
		t.Fatalf("Put through the resolver: %v", err)
	}
	got, err := kv.Get(ctx, &kvexample.GetRequest{Key: "greeting"})
	if err != nil || !strings.HasPrefix(string(got.GetValue()), "hello") {
		t.Fatalf("Get = %q, %v", got.GetValue(), err)
	}

	// kill -9 of the agent: the plugin runs on and is re-adopted.
	a.kill()
	a = e.start()
	al = a.waitAlloc(ids[0], "plugin healthy again", and(running("kv"), hasEvents("kv", "Reattached", 1), hasEvents("kv", api.TaskPluginHealthy, 2)))
	if got := lastPid(al, "kv"); got != pid {
		t.Fatalf("plugin pid %d after the agent restart, want the re-adopted %d", got, pid)
	}
	kv = kvexample.NewKVClient(dialPlugin(t, a.client, "pluginhost:///kv/kv_grpc"))
	got, err = kv.Get(ctx, &kvexample.GetRequest{Key: "greeting"})
	if err != nil || !strings.HasPrefix(string(got.GetValue()), "hello") {
		t.Fatalf("Get after the agent restart = %q, %v", got.GetValue(), err)
	}
}

// TestNetRPCPluginHosted: go-plugin's net/rpc example is hosted like a
// gRPC one: healthy through Control.Ping, registered, used through
// go-plugin's Reattach and Dispense, and re-adopted (same process, still
// answering) after kill -9 of the agent.
func TestNetRPCPluginHosted(t *testing.T) {
	e := newEnv(t, "")
	a := e.start()
	ids := a.runJob("gp-grpc-netrpc", exampleJobFile(t, "grpc-netrpc.hcl", "plugin-go-netrpc"))
	al := a.waitAlloc(ids[0], "plugin healthy", and(running("plugin"), hasEvents("plugin", api.TaskPluginHealthy, 1)))
	pid := lastPid(al, "plugin")
	base := &plugin.ClientConfig{HandshakeConfig: kvHandshake, Plugins: kvshared.PluginMap}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	use := func(a *agentProc) {
		t.Helper()
		f := api.FollowReattach(a.client, "kv", "kv_netrpc", base)
		defer f.Close()
		raw, err := f.Dispense(ctx, kvshared.PluginNetRPC)
		if err != nil {
			t.Fatal(err)
		}
		if err := useKV("")(ctx, t, raw); err != nil {
			t.Fatal(err)
		}
	}
	use(a)

	a.kill()
	a = e.start()
	al = a.waitAlloc(ids[0], "plugin healthy again", and(running("plugin"), hasEvents("plugin", "Reattached", 1), hasEvents("plugin", api.TaskPluginHealthy, 2)))
	if got := lastPid(al, "plugin"); got != pid {
		t.Fatalf("plugin pid %d after the agent restart, want the re-adopted %d", got, pid)
	}
	use(a)
	// "agent ready" counts plugins of every type, not only CSI's.
	a.mustWait("agent ready with 1 plugin", 30*time.Second, func(context.Context) (bool, error) {
		return strings.Contains(a.output(), "agent ready: plugins=1 csi_plugins=0 other_plugins=1"), nil
	}, api.TopicAgent)

	// A rolling update: the new allocation's health (Control.Ping) gates
	// it, the old one stops after, and a follower moves to the new one.
	f := api.FollowReattach(a.client, "kv", "kv_netrpc", base)
	defer f.Close()
	raw, err := f.Dispense(ctx, kvshared.PluginNetRPC)
	if err != nil {
		t.Fatal(err)
	}
	if err := useKV("")(ctx, t, raw); err != nil {
		t.Fatal(err)
	}
	_, changed := f.Current()
	src := strings.Replace(exampleJobFile(t, "grpc-netrpc.hcl", "plugin-go-netrpc"), `work_dir = "${NOMAD_TASK_DIR}"`,
		"work_dir = \"${NOMAD_TASK_DIR}\"\n        args     = [\"v2\"]", 1)
	second := a.runJob("gp-grpc-netrpc", src)
	if second[0] == ids[0] {
		t.Fatal("the update made no new allocation")
	}
	a.waitAlloc(second[0], "new version healthy", and(running("plugin"), hasEvents("plugin", api.TaskPluginHealthy, 1)))
	a.waitAlloc(ids[0], "old version stopped", taskDead("plugin"))
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("the follower never moved to the new allocation")
	}
	rec, _ := f.Current()
	if rec == nil || rec.AllocID != second[0] {
		t.Fatalf("follower on %+v, want allocation %s", rec, second[0])
	}
	raw, err = f.Dispense(ctx, kvshared.PluginNetRPC)
	if err != nil {
		t.Fatal(err)
	}
	if err := useKV("")(ctx, t, raw); err != nil {
		t.Fatalf("after the update: %v", err)
	}
}

// kvJob is plugins/kv as kv/kv-main; gen changes the task so that a
// re-submission rolls out a new allocation.
func kvJob(t *testing.T, gen int) string {
	return fmt.Sprintf(`job "kv" {
  group "g" {
    update {
      min_healthy_time = "500ms"
      healthy_deadline = "30s"
    }
    restart {
      attempts = 5
      interval = "10m"
      delay    = "1s"
      mode     = "delay"
    }
    task "kv" {
      driver = "go_plugin"
      config {
        command = %q
        plugin {
          type = "kv"
          name = "kv-main"
          health_timeout = "10s"
        }
      }
      env {
        KV_GENERATION = "%d"
      }
    }
  }
}
`, testbin.MustPath(t, "kv"), gen)
}

// consumer calls the kv plugin in a loop through the resolver, as
// examples/kvclient does, and records what happened.
type consumer struct {
	kv   kvpb.KVClient
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu       sync.Mutex
	calls    int
	failures []string
	// last success per instance, and the first success after a mark.
	instances map[string]int
	lastOK    time.Time
	okAfter   map[string]time.Time // mark name → first success after it
	marks     map[string]time.Time
}

func startConsumer(t *testing.T, client *api.Client) *consumer {
	ctx, cancel := context.WithCancel(context.Background())
	c := &consumer{kv: kvpb.NewKVClient(dialPlugin(t, client, "pluginhost:///kv/kv-main")), stop: cancel,
		instances: map[string]int{}, okAfter: map[string]time.Time{}, marks: map[string]time.Time{}}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
			resp, err := c.kv.Put(cctx, &kvpb.PutRequest{Key: "counter", Value: []byte(fmt.Sprint(i))})
			ccancel()
			now := time.Now()
			c.mu.Lock()
			if ctx.Err() == nil {
				c.calls++
				if err != nil {
					c.failures = append(c.failures, fmt.Sprintf("%s: %v", now.Format(time.StampMicro), err))
				} else {
					c.instances[resp.GetInstance()]++
					c.lastOK = now
					for m, at := range c.marks {
						if _, seen := c.okAfter[m]; !seen && now.After(at) {
							c.okAfter[m] = now
						}
					}
				}
			}
			c.mu.Unlock()
			// A call every few milliseconds: dense enough to catch a gap.
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(c.close)
	return c
}

func (c *consumer) close() { c.stop(); c.wg.Wait() }

func (c *consumer) mark(name string) {
	c.mu.Lock()
	c.marks[name] = time.Now()
	c.mu.Unlock()
}

func (c *consumer) snapshot() (calls int, failures []string, instances map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	inst := map[string]int{}
	for k, v := range c.instances {
		inst[k] = v
	}
	return c.calls, append([]string(nil), c.failures...), inst
}

// TestResolverFollowsUpdateAndCrash: a consumer calling plugins/kv in a
// loop through pluginhost:///kv/kv-main (wait-for-ready) sees no failed call
// while a rolling update replaces the allocation (the new one is healthy
// before the old one stops), moves to the new allocation by itself, and
// after a kill -9 of the active instance's process its calls resume within
// the restart delay (plus the relaunch).
func TestResolverFollowsUpdateAndCrash(t *testing.T) {
	e := newEnv(t, "")
	a := e.start()
	first := a.runJob("kv", kvJob(t, 1))
	a.waitAlloc(first[0], "plugin healthy", and(running("kv"), hasEvents("kv", api.TaskPluginHealthy, 1)))
	c := startConsumer(t, a.client)
	a.mustWait("calls on the first allocation", 30*time.Second, func(context.Context) (bool, error) {
		_, _, inst := c.snapshot()
		return inst[first[0]] > 10, nil
	})

	// Rolling update.
	second := a.runJob("kv", kvJob(t, 2))
	if second[0] == first[0] {
		t.Fatal("re-submission created no new allocation")
	}
	a.waitAlloc(first[0], "old allocation stopped", taskDead("kv"))
	a.mustWait("calls on the new allocation", 30*time.Second, func(context.Context) (bool, error) {
		_, _, inst := c.snapshot()
		return inst[second[0]] > 10, nil
	})
	calls, failures, inst := c.snapshot()
	if len(failures) != 0 {
		t.Fatalf("%d of %d calls failed across the rolling update:\n%s", len(failures), calls, strings.Join(failures, "\n"))
	}
	t.Logf("rolling update: %d calls, none failed; per instance %v", calls, inst)

	// kill -9 of the active instance: the task restarts after its delay
	// (1s plus up to 25%% jitter) in the same allocation, with a new socket.
	al, err := a.client.Allocation(context.Background(), second[0])
	if err != nil {
		t.Fatal(err)
	}
	pid := lastPid(al, "kv")
	c.mark("crash")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", pid, err)
	}
	a.waitAlloc(second[0], "plugin restarted and healthy", and(running("kv"), hasEvents("kv", api.TaskPluginHealthy, 2)))
	a.mustWait("calls after the crash", 30*time.Second, func(context.Context) (bool, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.okAfter["crash"]
		return ok, nil
	})
	c.mu.Lock()
	gap := c.okAfter["crash"].Sub(c.marks["crash"])
	c.mu.Unlock()
	// Restart delay 1s + 25% jitter, then launch, handshake, health and
	// registration, which take milliseconds; 2s of slack for a loaded
	// machine.
	if limit := 1250*time.Millisecond + 2*time.Second; gap > limit {
		t.Fatalf("calls resumed %s after the crash, want within %s", gap, limit)
	}
	calls2, failures2, _ := c.snapshot()
	// A call in flight at the moment of the kill may fail (it was sent);
	// wait-for-ready holds every later one until the next instance.
	if len(failures2) > 1 {
		t.Fatalf("%d calls failed around the crash, want at most the one in flight:\n%s", len(failures2), strings.Join(failures2, "\n"))
	}
	t.Logf("crash: calls resumed %s after kill -9 (%d calls in all, %d failed in flight)", gap, calls2, len(failures2))
}

func isSocket(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode()&os.ModeSocket != 0
}

// TestGenericPluginDeclared: a generic plugin whose task cannot start is
// not registered, yet `plugin status`, `plugin status TYPE/NAME`, -json and
// the API show it, 0 of 1 healthy, with why; a healthy one next to it shows
// 1 of 1 with its latest health check.
func TestGenericPluginDeclared(t *testing.T) {
	e := newEnv(t, "")
	a := e.start()
	okID := a.runJob("kv", kvJob(t, 0))[0]
	a.waitAlloc(okID, "kv healthy", and(running("kv"), hasEvents("kv", api.TaskPluginHealthy, 1)))
	// The handshake never comes: the process exits at once, and the
	// restart waits an hour.
	src := strings.NewReplacer(testbin.MustPath(t, "kv"), "/bin/false", `job "kv"`, `job "broken"`, `"kv-main"`, `"broken"`,
		`delay    = "1s"`, `delay    = "1h"`, `interval = "10m"`, `interval = "24h"`).Replace(kvJob(t, 0))
	badID := a.runJob("broken", src)[0]
	a.waitAlloc(badID, "restart pending", hasEvents("kv", api.TaskRestarting, 1))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := a.client.RegisteredPlugin(ctx, "kv", "broken")
	if err != nil {
		t.Fatalf("a declared plugin is not found: %v", err)
	}
	if p.Active != nil || len(p.Instances) != 0 || p.Healthy != 0 || p.Expected != 1 || len(p.Waiting) != 1 ||
		p.Waiting[0].AllocID != badID || !strings.Contains(p.Waiting[0].HealthDescription, "restart pending") {
		t.Fatalf("declared plugin %+v (waiting %+v)", p, p.Waiting)
	}
	good, err := a.client.RegisteredPlugin(ctx, "kv", "kv-main")
	if err != nil || good.Active == nil || !good.Active.Healthy || good.Active.CheckTime.IsZero() || good.Healthy != 1 || good.Expected != 1 || good.Active.Task != "kv" {
		t.Fatalf("registered plugin %+v, %v", good, err)
	}

	r := e.mustCLI(t, []string{"kv    broken   0/1               <none>", "kv    kv-main  1/1               " + short(okID)}, "plugin", "status")
	t.Logf("plugin status:\n%s", r.stdout)
	e.mustCLI(t, []string{"Expected          = 1", short(badID), "restart pending", "<not registered>"}, "plugin", "status", "kv/broken")
	var all []*api.PluginStatusListStub
	mustJSON(t, e.mustCLI(t, nil, "plugin", "status", "-json"), &all)
	var ids []string
	for _, p := range all {
		ids = append(ids, p.ID)
	}
	if strings.Join(ids, ",") != "kv/broken,kv/kv-main" {
		t.Fatalf("plugin status -json lists %v", ids)
	}

	// Stopped, it is neither registered nor declared.
	a.stopJob("broken")
	if _, err := a.client.RegisteredPlugin(ctx, "kv", "broken"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("a stopped declared plugin: %v", err)
	}
}

// The agent counts the broker leases held on each launch of a plugin and
// shows them (the UI's plugin page has a column): one while a consumer
// holds one, none once it let go, when the agent restarts the launch.
func TestBrokerLeasesShown(t *testing.T) {
	e := newEnv(t, "")
	a := e.start()
	ids := a.runJob("gpkv", goPluginExampleJob(t, "plugin-go-grpc"))
	a.waitAlloc(ids[0], "plugin healthy", and(running("kv"), hasEvents("kv", api.TaskPluginHealthy, 1)))
	ctx := context.Background()
	rec, err := a.client.PluginReattach(ctx, "kv", "kv_grpc")
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", e.sock)
	}}}
	lctx, release := context.WithCancel(ctx)
	defer release()
	req, _ := http.NewRequestWithContext(lctx, http.MethodGet,
		fmt.Sprintf("http://agent/v1/plugin/kv/kv_grpc/broker?alloc=%s&pid=%d", rec.AllocID, rec.Pid), nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("lease: %d", resp.StatusCode)
	}
	leases := func() int {
		p, err := a.client.RegisteredPlugin(ctx, "kv", "kv_grpc")
		if err != nil || p.Active == nil {
			return -1
		}
		return p.Active.BrokerLeases
	}
	if n := leases(); n != 1 {
		t.Fatalf("%d leases shown while one is held", n)
	}
	release()
	a.mustWait("the lease gone", 30*time.Second, func(context.Context) (bool, error) { return leases() == 0, nil },
		api.TopicRegistry, api.TopicPlugin, api.TopicTask)
}
