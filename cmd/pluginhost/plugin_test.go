package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

func addPlugin(fa *fakeAgent) {
	fa.mu.Lock()
	defer fa.mu.Unlock()
	oldA, newA := "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"
	fa.plugins["mockcsi"] = &api.CSIPlugin{
		ID: "mockcsi", Provider: "mock.csi.pluginhost", Version: "1.2.0",
		ControllersHealthy: 1, ControllersExpected: 1, NodesHealthy: 1, NodesExpected: 2,
		ActiveController: newA, ActiveNode: newA,
		Controllers: map[string]*api.CSIInfo{newA: {AllocID: newA, PluginID: "mockcsi", Healthy: true,
			HealthDescription: "healthy", UpdateTime: t0.Add(59 * time.Minute),
			Capabilities: []string{"CONTROLLER_SERVICE", "VOLUME_ACCESSIBILITY_CONSTRAINTS"}, RequiresTopologies: true,
			ControllerInfo: &api.CSIControllerInfo{Capabilities: []string{"CREATE_DELETE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME"}}}},
		Nodes: map[string]*api.CSIInfo{
			newA: {AllocID: newA, PluginID: "mockcsi", Healthy: true, HealthDescription: "healthy",
				UpdateTime:   t0.Add(59 * time.Minute),
				Capabilities: []string{"CONTROLLER_SERVICE", "VOLUME_ACCESSIBILITY_CONSTRAINTS", "VOLUME_EXPANSION_ONLINE"}, RequiresTopologies: true,
				NodeInfo: &api.CSINodeInfo{ID: "node1", MaxVolumes: 0, AccessibleTopology: map[string]string{"zone": "a"},
					Capabilities: []string{"STAGE_UNSTAGE_VOLUME", "VOLUME_CONDITION"}}},
			// The old allocation's driver is not the one in use: its
			// capabilities must not show.
			oldA: {AllocID: oldA, PluginID: "mockcsi", Healthy: false, HealthDescription: "probe: connection refused",
				Capabilities: []string{"GROUP_CONTROLLER_SERVICE"}},
		},
		Allocations: []*api.AllocListStub{{ID: newA, JobID: "demo", TaskGroup: "csi", DesiredStatus: "run", ClientStatus: "running",
			CreateTime: t0.UnixNano(), ModifyTime: t0.UnixNano()}},
	}
	fa.plugins["other"] = &api.CSIPlugin{ID: "other", Provider: "x"}
}

func TestPluginStatusList(t *testing.T) {
	fa, addr := startAgent(t)
	ctx := testCtx(t)
	if r := runCLI(t, ctx, addr, "plugin", "status"); r.code != 0 || r.stdout != "No plugins\n" {
		t.Errorf("empty: %+v", r)
	}
	addPlugin(fa)
	r := runCLI(t, ctx, addr, "plugin", "status")
	want := "" +
		"ID       Provider             Controllers Healthy/Expected  Nodes Healthy/Expected\n" +
		"mockcsi  mock.csi.pluginhost  1/1                           1/2\n" +
		"other    x                    0/0                           0/0\n"
	// The backend's map order is random: compare as sets of lines.
	if r.code != 0 || !sameLines(r.stdout, want) {
		t.Errorf("plugin status:\n%s\nwant:\n%s", r.stdout, want)
	}
	r = runCLI(t, ctx, addr, "plugin", "status", "-json")
	var ps []*api.CSIPluginListStub
	if err := json.Unmarshal([]byte(r.stdout), &ps); err != nil || len(ps) != 2 {
		t.Errorf("plugin status -json: %v\n%s", err, r.stdout)
	}

	// Plugins of other types follow, registered or only declared.
	addGeneric(fa)
	r = runCLI(t, ctx, addr, "plugin", "status")
	want += "\n" +
		"Type  Name   Healthy/Expected  Active Allocation  Instances  Socket\n" +
		"kv    later  0/1               <none>             0          <none>\n" +
		"kv    main   1/1               cccccccc           1          /run/kv.sock\n"
	if r.code != 0 || !strings.HasSuffix(r.stdout, want[strings.Index(want, "\n\n"):]) {
		t.Errorf("plugin status with kv plugins:\n%s\nwant:\n%s", r.stdout, want)
	}
	// -json lists every type: CSI rows as before (with Type), the others
	// by TYPE/NAME.
	r = runCLI(t, ctx, addr, "plugin", "status", "-json")
	var all []*api.PluginStatusListStub
	if err := json.Unmarshal([]byte(r.stdout), &all); err != nil || len(all) != 4 {
		t.Fatalf("plugin status -json: %v\n%s", err, r.stdout)
	}
	if all[0].Type != "csi" || all[0].ID != "mockcsi" || all[0].CSIPluginListStub == nil || all[0].NodesExpected != 2 ||
		all[2].ID != "kv/later" || all[2].PluginListStub == nil || all[2].Expected != 1 || all[3].ActiveAllocID == "" {
		t.Errorf("plugin status -json:\n%s", r.stdout)
	}
}

func addGeneric(fa *fakeAgent) {
	fa.mu.Lock()
	defer fa.mu.Unlock()
	inst := &api.PluginInstance{Type: "kv", Name: "main", AllocID: "cccccccc-0000-4000-8000-000000000003", SocketPath: "/run/kv.sock",
		Active: true, RegisteredAt: t0, Task: "kv", Healthy: true, HealthDescription: "healthy", CheckTime: t0.Add(59 * time.Minute)}
	fa.generic["kv/main"] = &api.Plugin{Type: "kv", Name: "main", Active: inst, Instances: []*api.PluginInstance{inst}, Healthy: 1, Expected: 1}
	fa.generic["kv/later"] = &api.Plugin{Type: "kv", Name: "later", Expected: 1, Waiting: []*api.PluginInstance{{
		Type: "kv", Name: "later", AllocID: "dddddddd-0000-4000-8000-000000000004", Task: "kv",
		HealthDescription: "restart pending (1 restarts so far): exec: no such file"}}}
}

// plugin status TYPE/NAME of a registered plugin and of one that is only
// declared: health per allocation, and why the declared one is not there.
func TestPluginStatusGeneric(t *testing.T) {
	fa, addr := startAgent(t)
	ctx := testCtx(t)
	addGeneric(fa)
	r := runCLI(t, ctx, addr, "plugin", "status", "kv/main")
	for _, want := range []string{
		"Healthy           = 1", "Expected          = 1", "Active Allocation = cccccccc", "Target            = pluginhost:///kv/main",
		"Allocation ID  Active  Healthy  Last Check  Health Description",
		"cccccccc       true    true     1m0s ago    healthy",
	} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("plugin status kv/main lacks %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}
	r = runCLI(t, ctx, addr, "plugin", "status", "kv/later")
	for _, want := range []string{
		"Healthy           = 0", "Expected          = 1", "Active Allocation = <none>",
		"dddddddd       false   false    never       restart pending (1 restarts so far): exec: no such file  <none>   <not registered>",
	} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("plugin status kv/later lacks %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}
	r = runCLI(t, ctx, addr, "plugin", "status", "-json", "kv/later")
	var p api.Plugin
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil || p.Active != nil || len(p.Waiting) != 1 || p.Waiting[0].HealthDescription == "" {
		t.Errorf("plugin status -json kv/later: %v\n%s", err, r.stdout)
	}
	if r := runCLI(t, ctx, addr, "plugin", "status", "kv/nope"); r.code != 1 || !strings.Contains(r.stderr, "No plugin kv/nope") {
		t.Errorf("unknown plugin: %+v", r)
	}
}

func sameLines(a, b string) bool {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	slices.Sort(la)
	slices.Sort(lb)
	return slices.Equal(la, lb)
}

func TestPluginStatusDetail(t *testing.T) {
	fa, addr := startAgent(t)
	ctx := testCtx(t)
	addPlugin(fa)
	r := runCLI(t, ctx, addr, "plugin", "status", "mockcsi")
	if r.code != 0 {
		t.Fatalf("plugin status mockcsi: %+v", r)
	}
	if strings.Contains(r.stdout, "GROUP_CONTROLLER_SERVICE") {
		t.Errorf("inactive allocation's capabilities shown:\n%s", r.stdout)
	}
	for _, want := range []string{
		"ID                   = mockcsi",
		"Version              = 1.2.0",
		"Nodes Expected       = 2",
		"Active Node          = bbbbbbbb",
		// Plugin capabilities once, merged from both halves; the service
		// lists hold only their own RPCs.
		"\nPlugin Capabilities\n  CONTROLLER_SERVICE\n  VOLUME_ACCESSIBILITY_CONSTRAINTS\n  VOLUME_EXPANSION_ONLINE\n" +
			"\nController Capabilities\n  CREATE_DELETE_VOLUME\n  PUBLISH_UNPUBLISH_VOLUME\n" +
			"\nNode Capabilities\n  STAGE_UNSTAGE_VOLUME\n  VOLUME_CONDITION\n\nNode Info\n",
		"Max Volumes         = unlimited",
		"Accessible Topology = zone=a",
		"Alloc ID  Type        Active  Healthy  Last Fingerprint  Health Description\n" +
			"bbbbbbbb  controller  true    true     1m0s ago          healthy\n" +
			"aaaaaaaa  node        false   false    never             probe: connection refused\n" +
			"bbbbbbbb  node        true    true     1m0s ago          healthy\n",
		"Allocations\nID        Job ID  Version  Task Group  Desired  Status   Created   Modified\nbbbbbbbb  demo    0        csi",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plugin status mockcsi lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runCLI(t, ctx, addr, "plugin", "status", "-json", "-verbose", "mockcsi")
	var p api.CSIPlugin
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil || len(p.Nodes) != 2 || p.ActiveNode == "" {
		t.Errorf("plugin status -json mockcsi: %v\n%s", err, r.stdout)
	}
	if n := p.Nodes[p.ActiveNode]; n == nil || !n.RequiresTopologies || !p.Controllers[p.ActiveController].RequiresTopologies {
		t.Errorf("plugin status -json mockcsi: RequiresTopologies lost:\n%s", r.stdout)
	}
	if r := runCLI(t, ctx, addr, "plugin", "status", "nope"); r.code != 1 || strings.Count(r.stderr, `"nope"`) != 1 || !strings.Contains(r.stderr, "No CSI plugin") {
		t.Errorf("unknown plugin: %+v", r)
	}
}
