package sdktest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/pluginhost/pluginhost/sdk"
	"github.com/pluginhost/pluginhost/sdk/internal/testbins"
	"github.com/pluginhost/pluginhost/sdk/internal/testcsi"
	"github.com/pluginhost/pluginhost/sdk/sdkcsi"
	"github.com/pluginhost/pluginhost/sdk/sdktest"
)

var bins *testbins.Bins

func TestMain(m *testing.M) { os.Exit(testbins.Main(m, &bins)) }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestStartSubprocess(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "plugin.log")
	p := sdktest.Start(t, bins.TestPlugin, sdktest.WithEnv(sdk.EnvLogFile+"="+logFile))
	ctx := ctxT(t)

	info, err := p.Identity.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil || info.GetName() != testcsi.Name {
		t.Fatalf("GetPluginInfo = %v, %v", info, err)
	}
	ni, err := p.Node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil || ni.GetNodeId() != strconv.Itoa(p.Pid) || p.Pid == os.Getpid() {
		t.Fatalf("NodeGetInfo = %v, %v; want the subprocess pid %d", ni, err, p.Pid)
	}
	// testplugin has no Controller: the client exists, the service does not.
	_, err = p.Controller.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("ControllerGetCapabilities = %v, want Unimplemented", err)
	}
	// WithEnv reached the plugin.
	b, err := os.ReadFile(logFile)
	if err != nil || !strings.Contains(string(b), "serving under go-plugin") {
		t.Fatalf("plugin log %s = %q, %v", logFile, b, err)
	}
}

func TestStartInProcess(t *testing.T) {
	id := &testcsi.Identity{}
	p := sdktest.StartInProcess(t, sdk.Config{Name: "inproc", CSI: sdkcsi.Services{Identity: id}})
	ctx := ctxT(t)
	for range 2 {
		if _, err := p.Identity.Probe(ctx, &csi.ProbeRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := id.Probes.Load(); got != 2 {
		t.Fatalf("in-process server saw %d probes, want 2", got)
	}
	if p.Client != nil || p.Pid != os.Getpid() {
		t.Fatalf("in-process plugin: Client %v, Pid %d", p.Client, p.Pid)
	}
}

// fakeTB records cleanups and failures; Fatalf ends the calling goroutine
// as testing.T does, so a harness failure can be observed from outside.
type fakeTB struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
	failures []string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Cleanup(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cleanups = append(f.cleanups, fn)
}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures = append(f.failures, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	runtime.Goexit()
}

// run calls body in its own goroutine, then runs the cleanups in reverse, as
// the testing package does for a test that ends (or fails) there.
func (f *fakeTB) run(body func(tb testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		body(f)
	}()
	<-done
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

func TestCleanupAfterFailingTest(t *testing.T) {
	f := &fakeTB{TB: t}
	var pid int
	var sock string
	f.run(func(tb testing.TB) {
		p := sdktest.Start(tb, bins.TestPlugin)
		pid, sock = p.Pid, p.SocketPath
		tb.Fatalf("the author's assertion failed")
	})
	if pid == 0 || len(f.failures) != 1 {
		t.Fatalf("pid %d, failures %q", pid, f.failures)
	}
	// go-plugin's Kill reaps its child, so the pid is gone, not a zombie.
	if !processGone(pid) {
		t.Fatalf("plugin %d still running after cleanup", pid)
	}
	if _, err := os.Stat(filepath.Dir(sock)); !os.IsNotExist(err) {
		t.Fatalf("socket dir %s left behind: %v", filepath.Dir(sock), err)
	}
}

func TestInProcessCleanupStopsServing(t *testing.T) {
	f := &fakeTB{TB: t}
	var sock string
	f.run(func(tb testing.TB) {
		p := sdktest.StartInProcess(tb, sdk.Config{CSI: sdkcsi.Services{Identity: &testcsi.Identity{}}})
		sock = p.SocketPath
		tb.Fatalf("fail")
	})
	if sock == "" || len(f.failures) != 1 {
		t.Fatalf("socket %q, failures %q", sock, f.failures)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket %s left behind: %v", sock, err)
	}
}

func TestStartFailuresAreReported(t *testing.T) {
	f := &fakeTB{TB: t}
	f.run(func(tb testing.TB) { sdktest.Start(tb, "/bin/false") })
	if len(f.failures) != 1 || !strings.Contains(f.failures[0], "/bin/false") {
		t.Fatalf("failures = %q", f.failures)
	}

	f = &fakeTB{TB: t}
	f.run(func(tb testing.TB) { sdktest.StartInProcess(tb, sdk.Config{Name: "no identity"}) })
	if len(f.failures) == 0 {
		t.Fatal("StartInProcess accepted a Config without Identity")
	}
}

// TestBuild: an outside module's test builds its plugin with Build, once
// per process, and launches it with Start; here plugins/kv, an sdk plugin
// that is not CSI.
func TestBuild(t *testing.T) {
	bin := sdktest.Build(t, "github.com/pluginhost/pluginhost/plugins/kv")
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	if again := sdktest.Build(t, "github.com/pluginhost/pluginhost/plugins/kv"); again != bin {
		t.Fatalf("second Build: %s, want %s", again, bin)
	}
	if fi2, err := os.Stat(bin); err != nil || !fi2.ModTime().Equal(fi.ModTime()) {
		t.Fatalf("second Build rebuilt the binary: %v %v", fi2, err)
	}
	p := sdktest.Start(t, bin, sdktest.WithVersions(sdk.HostConnPlugins("kv", sdk.ProtocolVersion)))
	hc, err := healthpb.NewHealthClient(p.Conn).Check(ctxT(t), &healthpb.HealthCheckRequest{Service: "plugin"})
	if err != nil || hc.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health of the built plugin: %v %v", hc, err)
	}
}

func TestBuildFails(t *testing.T) {
	ft := &fatalT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sdktest.Build(ft, "./no/such/package")
	}()
	<-done
	if !strings.Contains(ft.msg, "go build ./no/such/package") {
		t.Errorf("Build of a missing package: %q", ft.msg)
	}
}

// fatalT records Fatalf and ends the goroutine, as testing.T does.
type fatalT struct {
	testing.TB
	msg string
}

func (f *fatalT) Helper() {}
func (f *fatalT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
