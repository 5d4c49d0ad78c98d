package csi

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/internal/testbin"
)

// lockedBuffer collects a child's output for the failure message; the
// exec package writes to it from its own goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startMockCSI runs the real mockcsi binary as a standalone CSI driver
// (CSI_ENDPOINT, as under Nomad or Kubernetes) and returns its socket once
// it answers. The process is killed at cleanup.
func startMockCSI(t testing.TB, env ...string) string {
	t.Helper()
	bin := testbin.MustPath(t, "mockcsi")
	dir := shortDir(t)
	socket := filepath.Join(dir, "csi.sock")

	cmd := exec.Command(bin, "--state-dir", filepath.Join(dir, "state"), "--node-id", "test-node")
	cmd.Env = append(append(cmd.Environ(), "CSI_ENDPOINT=unix://"+socket), env...)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("mockcsi output:\n%s", out.String())
		}
	})

	// Wait until the driver answers: the client's own retries ride out
	// the time before it listens, and its exit ends the wait at once.
	// GetPluginInfo, not Probe, since some tests make Probe fail.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	go func() {
		select {
		case <-exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	c := testClient(t, socket, RetryPolicy{MaxAttempts: 1000, BaseDelay: 5 * time.Millisecond, MaxDelay: 50 * time.Millisecond})
	if _, err := c.GetPluginInfo(ctx, &csipb.GetPluginInfoRequest{}); err != nil {
		t.Fatalf("mockcsi never answered: %v", err)
	}
	return socket
}

// TestManagerFingerprintsRealMockCSI registers the real driver as a
// monolith and checks what the manager learns.
func TestManagerFingerprintsRealMockCSI(t *testing.T) {
	socket := startMockCSI(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	h := newHarness(t, nil, time.Hour)
	h.register(t, dynamic.PluginTypeCSIController, "mock", "alloc-1", socket)
	h.register(t, dynamic.PluginTypeCSINode, "mock", "alloc-1", socket)
	if err := h.m.Start(); err != nil {
		t.Fatal(err)
	}
	if err := h.m.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	st, ok := h.m.Plugin("mock")
	if !ok {
		t.Fatal("mockcsi not known to the manager")
	}
	if !st.Healthy() || st.ControllersHealthy != 1 || st.NodesHealthy != 1 {
		for _, f := range st.Allocations {
			t.Logf("%s: healthy=%v %s", f.Type, f.Healthy, f.HealthDescription)
		}
		t.Fatalf("counts %+v", st)
	}
	if st.Provider != "mockcsi.pluginhost.dev" || st.Version == "" {
		t.Errorf("provider %q version %q", st.Provider, st.Version)
	}
	ctrl, node := st.Controller(), st.Node()
	if !ctrl.HasPluginCapability(CapControllerService) || !slices.Contains(ctrl.ControllerCapabilities, CapControllerCreateDelete) {
		t.Errorf("controller capabilities: plugin %q controller %q", ctrl.PluginCapabilities, ctrl.ControllerCapabilities)
	}
	if node.NodeInfo == nil || node.NodeInfo.NodeID != "test-node" {
		t.Errorf("node info %+v", node.NodeInfo)
	}
	if len(node.NodeCapabilities) == 0 || slices.ContainsFunc(node.NodeCapabilities, func(s string) bool { return s == "" }) {
		t.Errorf("node capabilities %q", node.NodeCapabilities)
	}
	t.Logf("mockcsi: plugin caps %q, controller caps %q, node caps %q", ctrl.PluginCapabilities, ctrl.ControllerCapabilities, node.NodeCapabilities)
}

// The real driver's injected Probe failure is reported as unhealthy, with
// the driver's own message.
func TestManagerRealMockCSIProbeFailure(t *testing.T) {
	socket := startMockCSI(t, "MOCKCSI_PROBE_FAIL=1")
	h := newHarness(t, nil, time.Hour)
	if err := h.m.Start(); err != nil {
		t.Fatal(err)
	}
	h.register(t, dynamic.PluginTypeCSINode, "mock", "alloc-1", socket)
	e := h.expect(t, "alloc-1", false)
	if !strings.Contains(e.Description, "probe failed") {
		t.Fatalf("event %q", e)
	}
}
