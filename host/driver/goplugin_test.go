package driver

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/hashicorp/go-hclog"
	"github.com/pluginhost/pluginhost/internal/testproc"
	"github.com/pluginhost/pluginhost/sdk"
	"google.golang.org/grpc"
)

func newGoPlugin(t *testing.T, w *Watcher) *GoPlugin {
	t.Helper()
	d, err := NewGoPlugin(GoPluginConfig{
		Watcher: w, Handshake: sdk.Handshake(), PluginSets: sdk.HostPlugins(), Dispense: sdk.PluginCSI,
		StartTimeout: 20 * time.Second, Logger: hclog.NewNullLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// startPlugin launches testplugin with stderr going to a file.
func startPlugin(t *testing.T, d *GoPlugin, extraEnv ...string) (PluginTask, string) {
	t.Helper()
	dir := t.TempDir()
	sockDir := filepath.Join(dir, "s")
	if err := os.Mkdir(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	return launchPlugin(t, d, dir, &StartRequest{
		Command: testPlugin, Env: append([]string{"PATH=/usr/bin:/bin"}, extraEnv...), SocketDir: sockDir,
	})
}

// launchPlugin starts req with its output in dir/stderr, whose path it
// returns; the test's cleanup stops the plugin.
func launchPlugin(t *testing.T, d *GoPlugin, dir string, req *StartRequest) (PluginTask, string) {
	t.Helper()
	errPath := filepath.Join(dir, "stderr")
	errFile, err := os.Create(errPath)
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	req.Stdout, req.Stderr = errFile, errFile
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	task, err := d.Start(ctx, req)
	if err != nil {
		out, _ := os.ReadFile(errPath)
		t.Fatalf("%v\nplugin stderr:\n%s", err, out)
	}
	killOnCleanup(t, task.Handle().Pid)
	t.Cleanup(task.Detach)
	return task.(PluginTask), errPath
}

func pluginName(t *testing.T, dispensed any) string {
	t.Helper()
	conn := dispensed.(*grpc.ClientConn)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := csipb.NewIdentityClient(conn).GetPluginInfo(ctx, &csipb.GetPluginInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetName()
}

func TestGoPluginStartReattachKill(t *testing.T) {
	w := newWatcher(t)
	d := newGoPlugin(t, w)
	task, _ := startPlugin(t, d)
	if got := pluginName(t, task.Dispensed()); got != "testplugin.pluginhost" {
		t.Fatalf("GetPluginInfo name %q", got)
	}
	assertIdentity(t, task)
	h := task.Handle()
	if h.Reattach == nil || h.Reattach.ProtocolVersion != sdk.ProtocolVersion || h.Reattach.Network != "unix" {
		t.Fatalf("reattach record %+v", h.Reattach)
	}
	if !strings.HasPrefix(h.SocketPath, filepath.Dir(h.SocketPath)) || len(h.SocketPath) > 107 {
		t.Fatalf("socket path %q", h.SocketPath)
	}
	task.Detach() // agent restart: the plugin keeps serving

	d2 := newGoPlugin(t, newWatcher(t))
	re, err := d2.Recover(context.Background(), h, nil)
	if err != nil {
		t.Fatal(err)
	}
	if re.Handle().Pid != h.Pid {
		t.Fatalf("re-adopted pid %d, want %d", re.Handle().Pid, h.Pid)
	}
	if got := pluginName(t, re.(PluginTask).Dispensed()); got != "testplugin.pluginhost" {
		t.Fatalf("after reattach GetPluginInfo name %q", got)
	}
	assertIdentity(t, re.(PluginTask))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := re.Kill(ctx, syscall.SIGTERM, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	testproc.WaitGone(t, h.Pid, 5*time.Second)
}

func TestGoPluginReattachRefusesStranger(t *testing.T) {
	d := newGoPlugin(t, newWatcher(t))
	task, _ := startPlugin(t, d)
	h := task.Handle()
	h.StartTime--
	if _, err := d.Recover(context.Background(), h, nil); err == nil {
		t.Fatal("reattached to a process with another start time")
	}
	if !alive(h.Pid) {
		t.Fatal("the process was signalled")
	}
	h = task.Handle()
	h.Reattach.ProtocolVersion = 99
	if _, err := d.Recover(context.Background(), h, nil); err == nil || !strings.Contains(err.Error(), "version 99") {
		t.Fatalf("Recover with unknown protocol version = %v", err)
	}
}

// TestGoPluginBadStderrCannotReachParser proves that a plugin's stderr line
// {"@message": 42}, which panics go-plugin v1.8's log parser, goes to the
// task's log instead: the test process would die of the panic otherwise.
func TestGoPluginBadStderrCannotReachParser(t *testing.T) {
	d := newGoPlugin(t, newWatcher(t))
	task, errPath := startPlugin(t, d, "TESTPLUGIN_BAD_STDERR=1")
	if got := pluginName(t, task.Dispensed()); got == "" {
		t.Fatal("no name")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := task.Kill(ctx, syscall.SIGTERM, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(errPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte(`{"@message": 42}`)); n < 1 {
		t.Fatalf("the plugin's stderr line is not in its log file:\n%s", b)
	}
}

func TestGoPluginEnvironmentIsExplicit(t *testing.T) {
	t.Setenv("PLUGINHOST_TEST_LEAK", "agent-secret")
	d := newGoPlugin(t, newWatcher(t))
	task, _ := startPlugin(t, d, "ONLY_THIS=1")
	b, err := os.ReadFile("/proc/" + itoa(task.Handle().Pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	env := string(b)
	if strings.Contains(env, "PLUGINHOST_TEST_LEAK") {
		t.Fatal("the agent's environment leaked into the plugin")
	}
	if !strings.Contains(env, "ONLY_THIS=1") || !strings.Contains(env, sdk.MagicCookieKey+"=") {
		t.Fatalf("plugin environment lacks the task's or go-plugin's variables: %q", env)
	}
}

func TestGoPluginChecksumMismatch(t *testing.T) {
	d := newGoPlugin(t, newWatcher(t))
	_, err := d.Start(context.Background(), &StartRequest{
		Command: testPlugin, SocketDir: t.TempDir(), Checksum: "sha256:" + strings.Repeat("ab", 32),
	})
	if err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("Start = %v, want checksum mismatch", err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestGoPluginReattachUnreachableKills: the start time proves the process
// is our task, but it does not answer on its socket; it is killed so that
// the restart that follows cannot run next to it.
func TestGoPluginReattachUnreachableKills(t *testing.T) {
	raw := NewRawExec(newWatcher(t))
	task, out := startRaw(t, raw, "sleep")
	if _, err := out.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	h := task.Handle()
	h.Driver = "go_plugin"
	h.Reattach = &ReattachRecord{Protocol: "grpc", ProtocolVersion: sdk.ProtocolVersion, Network: "unix", Addr: filepath.Join(t.TempDir(), "gone.sock"), Pid: h.Pid}
	d := newGoPlugin(t, newWatcher(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := d.Recover(ctx, h, nil); err == nil {
		t.Fatal("reattached to a process with no plugin socket")
	}
	if res := waitDone(t, task, 10*time.Second); res.Signal != int(syscall.SIGKILL) {
		t.Fatalf("unreachable plugin ended with %+v, want SIGKILL", res)
	}
}

// assertIdentity checks what the identity check kept: GetPluginInfo's
// answer and the Probe asked alongside it.
func assertIdentity(t *testing.T, task PluginTask) {
	t.Helper()
	id, ok := task.Identity().(*CSIIdentity)
	if !ok {
		t.Fatalf("identity %T, want *CSIIdentity", task.Identity())
	}
	if id.Info.GetName() != "testplugin.pluginhost" || id.ProbeErr != nil || id.Probe == nil {
		t.Fatalf("identity: info %v, probe %v, probe error %v", id.Info, id.Probe, id.ProbeErr)
	}
}

// A go_plugin task with a user runs as that user, as a raw_exec one does
// (on main it ran as root whatever its `user` said), and its socket is its
// own.
func TestGoPluginRunsAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running as another user needs root")
	}
	// Where nobody may run the plugin and bind its socket: world-searchable
	// directories, the socket directory nobody's own.
	dir, err := os.MkdirTemp("", "gpuser")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "plugin")
	b, err := os.ReadFile(testPlugin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	sockDir := filepath.Join(dir, "s")
	if err := os.Mkdir(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(sockDir, int(nobody.UID), int(nobody.GID)); err != nil {
		t.Fatal(err)
	}
	task, _ := launchPlugin(t, newGoPlugin(t, newWatcher(t)), dir, &StartRequest{
		Command: bin, Env: []string{"PATH=/usr/bin:/bin"}, SocketDir: sockDir, User: nobody,
	})
	status, err := os.ReadFile("/proc/" + itoa(task.Handle().Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(status), "\nUid:\t65534\t65534\t65534\t65534\n") {
		t.Fatalf("plugin is not running as nobody:\n%s", status)
	}
	fi, err := os.Stat(task.Handle().SocketPath)
	if err != nil || fi.Sys().(*syscall.Stat_t).Uid != nobody.UID {
		t.Fatalf("socket %s: %v (%v), want nobody's", task.Handle().SocketPath, fi, err)
	}
	assertIdentity(t, task)
}
