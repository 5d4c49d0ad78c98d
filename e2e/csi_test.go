package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// csiConfig makes the CSI manager fingerprint every second, so that health
// changes surface within the tests' time.
const csiConfig = "csi {\n  fingerprint_interval = \"1s\"\n  probe_timeout = \"2s\"\n}\n"

// csiTask is mockcsi as a monolith CSI plugin under driver ("go_plugin" or
// "raw_exec"); raw_exec passes the supervisor's CSI_ENDPOINT as a flag, as
// third-party drivers want it.
func csiTask(t testing.TB, driver, name, marker, pluginID, healthTimeout string) taskSpec {
	var tk taskSpec
	if driver == "go_plugin" {
		tk = mockcsiGoPlugin(t, name, marker)
	} else {
		tk = mockcsiRawExec(t, name, marker)
		tk.args = []string{"--endpoint=${CSI_ENDPOINT}", "--node-id=e2e"}
	}
	tk.extra = fmt.Sprintf("      csi_plugin {\n        id = %q\n        type = \"monolith\"\n        health_timeout = %q\n      }\n", pluginID, healthTimeout)
	return tk
}

// pluginWatch follows the Plugin and Registry topics and remembers what it
// saw, so that events that arrive before the caller knows an allocation ID
// are not lost.
type pluginWatch struct {
	t  testing.TB
	es *api.EventStream
	// healthy maps alloc ID and plugin type to the latest health seen.
	healthy map[string]bool
	// active maps plugin type to the allocation the registry last made
	// active.
	active map[string]string
}

// watchPlugins subscribes; the subscription is live when it returns.
func (a *agentProc) watchPlugins() *pluginWatch {
	a.t.Helper()
	// The stream lives as long as the test; Close in Cleanup ends it.
	es, err := a.client.Events(context.Background(), api.TopicPlugin, api.TopicRegistry)
	if err != nil {
		a.t.Fatalf("subscribe to plugin events: %v", err)
	}
	a.t.Cleanup(func() { _ = es.Close() })
	return &pluginWatch{t: a.t, es: es, healthy: map[string]bool{}, active: map[string]string{}}
}

// until reads events until cond holds on what was seen.
func (w *pluginWatch) until(what string, cond func() bool) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Next blocks in a read that only a Close ends; a deadline closes it.
	stop := context.AfterFunc(ctx, func() { _ = w.es.Close() })
	defer stop()
	for !cond() {
		ev, err := w.es.Next(ctx)
		if err != nil {
			w.t.Fatalf("waiting for %s: %v (health seen: %v, active: %v)", what, err, w.healthy, w.active)
		}
		switch ev.Topic {
		case api.TopicPlugin:
			w.healthy[ev.Payload.AllocID+"/"+ev.Payload.PluginType] = ev.Type == "PluginHealthy"
		case api.TopicRegistry:
			if strings.HasSuffix(ev.Payload.Message, "(active)") {
				w.active[ev.Payload.PluginType] = ev.Payload.AllocID
			}
		}
	}
}

// waitHealthy waits for PluginHealthy events of both halves of a monolith.
func (w *pluginWatch) waitHealthy(alloc string) {
	w.t.Helper()
	w.until("plugin healthy in "+short(alloc), func() bool {
		return w.healthy[alloc+"/csi-node"] && w.healthy[alloc+"/csi-controller"]
	})
}

// waitActive waits until the registry has made alloc the active instance of
// both halves.
func (w *pluginWatch) waitActive(alloc string) {
	w.t.Helper()
	w.until("allocation "+short(alloc)+" active", func() bool {
		return w.active["csi-node"] == alloc && w.active["csi-controller"] == alloc
	})
}

// pluginStatus reads `plugin status -json ID` through the CLI.
func (e *env) pluginStatus(id string) *api.CSIPlugin {
	e.t.Helper()
	var p api.CSIPlugin
	mustJSON(e.t, e.cli("plugin", "status", "-json", id), &p)
	return &p
}

// TestCSIPluginHealthy runs mockcsi as a CSI plugin under both drivers and
// waits for the plugin-healthy events; `plugin status` agrees, and `job
// stop` deregisters it and leaves nothing running.
func TestCSIPluginHealthy(t *testing.T) {
	for _, drv := range []string{"go_plugin", "raw_exec"} {
		t.Run(drv, func(t *testing.T) {
			e := newEnv(t, csiConfig)
			a := e.start()
			w := a.watchPlugins()
			m := e.markerFor("csi")
			ids := a.runJob("csi", jobHCL("csi", restartPolicy, csiTask(t, drv, "plugin", m, "e2e-csi", "30s")))
			w.waitHealthy(ids[0])
			p := e.pluginStatus("e2e-csi")
			if p.NodesHealthy != 1 || p.ControllersHealthy != 1 || p.ActiveNode != ids[0] || p.ActiveController != ids[0] {
				t.Fatalf("plugin status: nodes %d/%d controllers %d/%d active %s/%s, want 1/1 1/1 and %s",
					p.NodesHealthy, p.NodesExpected, p.ControllersHealthy, p.ControllersExpected, p.ActiveNode, p.ActiveController, ids[0])
			}
			if p.Provider != "mockcsi.pluginhost.dev" || p.Nodes[ids[0]] == nil || p.Nodes[ids[0]].NodeInfo == nil || p.Nodes[ids[0]].NodeInfo.ID != "e2e" {
				t.Fatalf("plugin status does not show mockcsi's fingerprint: %+v", p)
			}
			a.stopAndCheckNoOrphans("csi", m)
			_, err := a.client.Plugin(context.Background(), "e2e-csi")
			if err == nil {
				p, _ := a.client.Plugin(context.Background(), "e2e-csi")
				if len(p.Nodes)+len(p.Controllers) != 0 {
					t.Fatalf("plugin still registered after job stop: %+v", p)
				}
			} else if !errors.Is(err, api.ErrNotFound) {
				t.Fatalf("plugin after job stop: %v", err)
			}
		})
	}
}

// TestCSIRollingUpdate runs a second allocation of the same plugin (another
// job with the same csi_plugin id): the newer becomes active, and the older
// takes over again when the newer stops.
func TestCSIRollingUpdate(t *testing.T) {
	e := newEnv(t, csiConfig)
	a := e.start()
	w := a.watchPlugins()
	mOld, mNew := e.markerFor("old"), e.markerFor("new")
	old := a.runJob("old", jobHCL("old", restartPolicy, csiTask(t, "go_plugin", "plugin", mOld, "rolling", "30s")))[0]
	w.waitHealthy(old)
	w.waitActive(old)
	newer := a.runJob("new", jobHCL("new", restartPolicy, csiTask(t, "raw_exec", "plugin", mNew, "rolling", "30s")))[0]
	w.waitHealthy(newer)
	w.waitActive(newer)
	p := e.pluginStatus("rolling")
	// Nodes and Controllers hold fingerprints, which the manager takes of
	// the active instance only; Allocations lists every registered one.
	if p.ActiveNode != newer || p.ActiveController != newer || p.Nodes[newer] == nil || !slices.Equal(pluginAllocs(p), sorted(old, newer)) {
		t.Fatalf("during the update: active %s/%s, allocations %v; want %s active and both registered", p.ActiveNode, p.ActiveController, pluginAllocs(p), newer)
	}
	a.stopAndCheckNoOrphans("new", mNew)
	w.waitActive(old)
	// The manager fingerprints the instance it made active again on its
	// own schedule, and no event says it did (under load, after the
	// switch it can still be the stand-in for a moment).
	p = e.pluginStatus("rolling")
	for deadline := time.Now().Add(15 * time.Second); (p.Nodes[old] == nil || !p.Nodes[old].Healthy) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		p = e.pluginStatus("rolling")
	}
	if p.ActiveNode != old || p.ActiveController != old || !slices.Equal(pluginAllocs(p), []string{old}) || p.Nodes[old] == nil || !p.Nodes[old].Healthy {
		t.Fatalf("after the newer stopped: active %s/%s, allocations %v, nodes %v; want only %s, healthy", p.ActiveNode, p.ActiveController, pluginAllocs(p), keys(p.Nodes), old)
	}
	a.stopAndCheckNoOrphans("old", mOld)
}

// TestCSIProbeFailure runs a plugin whose Probe fails: the supervisor
// reports it unhealthy, restarts it at health_timeout, and the registry
// never offers it.
func TestCSIProbeFailure(t *testing.T) {
	e := newEnv(t, csiConfig)
	a := e.start()
	m := e.markerFor("sick")
	tk := csiTask(t, "go_plugin", "plugin", m, "sick", "2s")
	tk.env = map[string]string{"MOCKCSI_PROBE_FAIL": "true"}
	ids := a.runJob("sick", jobHCL("sick", restartPolicy, tk))
	al := a.waitAlloc(ids[0], "unhealthy, then restarted", and(
		hasEvents("plugin", api.TaskPluginNotHealthy, 1),
		hasEvents("plugin", api.TaskRestarting, 1),
		hasEvents("plugin", api.TaskStarted, 2),
		running("plugin")))
	if n := len(events(al, "plugin", api.TaskPluginHealthy)) + len(events(al, "plugin", api.TaskPluginUnhealthy)); n != 0 {
		t.Fatalf("a plugin whose Probe fails was reported healthy or \"became unhealthy\" %d times: %s", n, eventSummary(al, "plugin"))
	}
	onlyCopy(t, al, "plugin", m)
	p, err := a.client.Plugin(context.Background(), "sick")
	if err != nil {
		t.Fatalf("a failing plugin vanished from plugin status: %v", err)
	}
	if p.NodesHealthy > 0 || p.ActiveNode != "" {
		t.Fatalf("a plugin whose Probe fails is offered: %+v", p)
	}
	// It is listed, 0 of 1 healthy, and the detail view says why.
	if p.NodesExpected != 1 || p.Nodes[ids[0]] == nil || p.Nodes[ids[0]].HealthDescription == "" {
		t.Fatalf("plugin status of a failing plugin: %+v", p)
	}
	t.Logf("why: %s", p.Nodes[ids[0]].HealthDescription)
	stubs, err := a.client.Plugins(context.Background())
	if err != nil || len(stubs) != 1 || stubs[0].ID != "sick" || stubs[0].NodesExpected != 1 || stubs[0].NodesHealthy != 0 {
		t.Fatalf("plugin list: %v %+v", err, stubs)
	}
	a.stopAndCheckNoOrphans("sick", m)
}

// TestCSIKill9 kills the agent while CSI plugins run under both drivers:
// the next agent reports ready only once it has fingerprinted them, adopts
// the same processes, and shows the same registry.
func TestCSIKill9(t *testing.T) {
	e := newEnv(t, csiConfig)
	a1 := e.start()
	w := a1.watchPlugins()
	type plug struct{ job, drv, marker, alloc string }
	plugs := []*plug{{job: "gp", drv: "go_plugin"}, {job: "rx", drv: "raw_exec"}}
	for _, p := range plugs {
		p.marker = e.markerFor(p.job)
		p.alloc = a1.runJob(p.job, jobHCL(p.job, restartPolicy, csiTask(t, p.drv, "plugin", p.marker, "k9-"+p.job, "30s")))[0]
	}
	before := map[string][]byte{}
	pids := map[string]int{}
	for _, p := range plugs {
		w.waitHealthy(p.alloc)
		before[p.job] = normalizedPlugin(t, e.pluginStatus("k9-"+p.job))
		al, err := a1.client.Allocation(context.Background(), p.alloc)
		if err != nil {
			t.Fatal(err)
		}
		pids[p.job] = onlyCopy(t, al, "plugin", p.marker)
	}
	a1.kill()

	a2 := e.start()
	for _, p := range plugs {
		al := a2.waitAlloc(p.alloc, "plugin adopted", and(running("plugin"), hasEvents("plugin", "Reattached", 1)))
		if pid := onlyCopy(t, al, "plugin", p.marker); pid != pids[p.job] {
			t.Fatalf("%s: plugin pid %d after restart, %d before", p.job, pid, pids[p.job])
		}
		// Ready means every restored plugin was fingerprinted: no
		// waiting needed for the registry to be whole again.
		if after := normalizedPlugin(t, e.pluginStatus("k9-"+p.job)); !bytes.Equal(after, before[p.job]) {
			t.Fatalf("%s: plugin status changed across the restart:\nbefore %s\nafter  %s", p.job, before[p.job], after)
		}
	}
	a2.stopAndCheckNoOrphans("gp", plugs[0].marker)
	a2.stopAndCheckNoOrphans("rx", plugs[1].marker)
	waitNoneMentioning(t, filepath.Join(e.dataDir, "alloc"), 5*time.Second)
}

// normalizedPlugin is a plugin's status without what legitimately changes
// across a restart: fingerprint times and the allocations' event history.
func normalizedPlugin(t testing.TB, p *api.CSIPlugin) []byte {
	t.Helper()
	for _, m := range []map[string]*api.CSIInfo{p.Nodes, p.Controllers} {
		for _, info := range m {
			info.UpdateTime = time.Time{}
		}
	}
	for _, al := range p.Allocations {
		al.TaskStates, al.ModifyTime = nil, 0
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCSILongDataDir uses a data dir so long that the allocation socket
// directory under it could not hold a socket within 107 bytes: the agent
// must fall back to its short socket root, and the plugins must work.
func TestCSILongDataDir(t *testing.T) {
	e := newEnvAt(t, strings.Repeat("long-data-dir-", 5), csiConfig)
	if n := len(filepath.Join(e.dataDir, "sockets", "00000000-0000-0000-0000-000000000000", "csi.sock")); n <= 107 {
		t.Fatalf("data dir too short for this test: the socket path would be %d bytes", n)
	}
	a := e.start()
	w := a.watchPlugins()
	for _, drv := range []string{"go_plugin", "raw_exec"} {
		m := e.markerFor(drv)
		job := strings.ReplaceAll(drv, "_", "-")
		alloc := a.runJob(job, jobHCL(job, restartPolicy, csiTask(t, drv, "plugin", m, "long-"+job, "30s")))[0]
		w.waitHealthy(alloc)
		if drv == "raw_exec" {
			al, err := a.client.Allocation(context.Background(), alloc)
			if err != nil {
				t.Fatal(err)
			}
			pid := onlyCopy(t, al, "plugin", m)
			p, _ := readProc(pid)
			ep := ""
			for _, kv := range bytes.Split(p.environ, []byte{0}) {
				if v, ok := strings.CutPrefix(string(kv), "CSI_ENDPOINT=unix://"); ok {
					ep = v
				}
			}
			if ep == "" || len(ep) > 107 || strings.HasPrefix(ep, e.dataDir) {
				t.Fatalf("CSI_ENDPOINT %q: want a socket outside the data dir within 107 bytes", ep)
			}
			// The fallback root is outside the test's temporary dir;
			// its <hash> directory belongs to this data dir alone.
			t.Cleanup(func() { _ = os.RemoveAll(filepath.Dir(filepath.Dir(ep))) })

		}
		a.stopAndCheckNoOrphans(job, m)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// pluginAllocs lists the allocation IDs backing a plugin, sorted.
func pluginAllocs(p *api.CSIPlugin) []string {
	var ids []string
	for _, al := range p.Allocations {
		ids = append(ids, al.ID)
	}
	slices.Sort(ids)
	return ids
}

func sorted(s ...string) []string {
	slices.Sort(s)
	return s
}
