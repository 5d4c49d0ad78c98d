package plugins

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/csi"
	"github.com/pluginhost/pluginhost/csi/internal/csitest"
	"github.com/pluginhost/pluginhost/dynamic"
)

func TestManagerFingerprintsRealMockCSI(t *testing.T) {
	socket := csitest.StartMockCSI(t)
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
	if !ctrl.HasPluginCapability(csi.CapControllerService) || !slices.Contains(ctrl.ControllerCapabilities, csi.CapControllerCreateDelete) {
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
	socket := csitest.StartMockCSI(t, "MOCKCSI_PROBE_FAIL=1")
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
