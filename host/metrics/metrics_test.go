package metrics

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"

	"github.com/pluginhost/pluginhost/csi"
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
	if err := m.WatchPlugins([]string{"csi-node", "csi-controller"}, func() []*csi.PluginStatus {
		return []*csi.PluginStatus{{ID: "p", Allocations: []*csi.Fingerprint{
			{PluginID: "p", Type: "csi-node", Healthy: true}, {PluginID: "p", Type: "csi-controller"},
		}}}
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
	// 1 + 4 event types + 4 (2 types x healthy/unhealthy) + 2 + 2 queues + 1 + 1.
	if n != 15 {
		t.Fatalf("%d series, want 15", n)
	}
	if v := testutil.ToFloat64(m.commitErrors); v != 1 {
		t.Fatalf("commit errors %v", v)
	}
}
