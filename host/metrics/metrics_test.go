package metrics

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"

	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/internal/reconcile"
)

// Every source registers next to the others (two queues included) and the
// registry gathers without errors; recorded values come out as recorded.
func TestSourcesGatherTogether(t *testing.T) {
	m := New()
	if err := m.WatchRegistry(func() map[string]dynamic.TypeStats {
		return map[string]dynamic.TypeStats{"csi-node": {Plugins: 2, Allocations: 3, Events: map[dynamic.EventType]uint64{dynamic.EventRegistered: 4}}}
	}); err != nil {
		t.Fatal(err)
	}
	if err := m.WatchPlugins(func() []string { return []string{"csi-node", "csi-controller", "csi-node"} }, func() []PluginHealth {
		return []PluginHealth{{Type: "csi-node", Name: "p", Healthy: true}, {Type: "csi-controller", Name: "p"},
			{Type: "kv", Name: "main", Healthy: true}}
	}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"jobs", "volumes"} {
		if err := m.WatchQueue(q, func() reconcile.Stats { return reconcile.Stats{Depth: 5, Retries: 2} }); err != nil {
			t.Fatalf("queue %s: %v", q, err)
		}
	}
	if err := m.WatchQueue("jobs", func() reconcile.Stats { return reconcile.Stats{} }); err == nil {
		t.Fatal("a second jobs queue registered")
	}
	m.ObserveRPC("Probe", codes.OK, time.Millisecond)
	m.ObserveCommit(3, time.Millisecond, nil)
	m.ObserveCommit(1, time.Millisecond, errors.New("disk full"))

	n, err := testutil.GatherAndCount(m.Gatherer(),
		"pluginhost_registry_plugins", "pluginhost_registry_events", "pluginhost_plugins", "pluginhost_plugin_healthy",
		"pluginhost_reconcile_queue_depth", "pluginhost_csi_rpc_seconds", "pluginhost_state_commit_errors")
	if err != nil {
		t.Fatal(err)
	}
	// 1 + 4 event types + 6 (3 types x healthy/unhealthy) + 3 + 2 queues + 1 + 1.
	if n != 18 {
		t.Fatalf("%d series, want 18", n)
	}
	want := `
# HELP pluginhost_plugins Active plugin instances, by plugin type (csi-controller, csi-node, or a generic plugin's) and health (healthy, unhealthy).
# TYPE pluginhost_plugins gauge
pluginhost_plugins{health="healthy",type="csi-controller"} 0
pluginhost_plugins{health="healthy",type="csi-node"} 1
pluginhost_plugins{health="healthy",type="kv"} 1
pluginhost_plugins{health="unhealthy",type="csi-controller"} 1
pluginhost_plugins{health="unhealthy",type="csi-node"} 0
pluginhost_plugins{health="unhealthy",type="kv"} 0
`
	if err := testutil.GatherAndCompare(m.Gatherer(), strings.NewReader(want), "pluginhost_plugins"); err != nil {
		t.Fatal(err)
	}
	if v := testutil.ToFloat64(m.commitErrors); v != 1 {
		t.Fatalf("commit errors %v", v)
	}
}
