package apiconv

import (
	"sort"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/jobs"
)

// UnregisteredStub lists a declared CSI plugin the manager does not know.
func UnregisteredStub(id string, tasks []jobs.DeclaredTask) *api.CSIPluginListStub {
	s := &api.CSIPluginListStub{ID: id}
	for _, d := range tasks {
		if d.Controller() {
			s.ControllersExpected++
		}
		if d.Node() {
			s.NodesExpected++
		}
	}
	return s
}

// UnregisteredPlugin describes a declared CSI plugin that no allocation has
// registered: every declaring allocation unhealthy, with why.
func UnregisteredPlugin(id string, tasks []jobs.DeclaredTask) *api.CSIPlugin {
	stub := UnregisteredStub(id, tasks)
	out := &api.CSIPlugin{ID: id, Controllers: map[string]*api.CSIInfo{}, Nodes: map[string]*api.CSIInfo{},
		ControllersExpected: stub.ControllersExpected, NodesExpected: stub.NodesExpected}
	seen := map[string]bool{}
	for _, d := range tasks {
		snap := d.Snap
		info := &api.CSIInfo{PluginID: id, AllocID: snap.Alloc.ID, HealthDescription: WhyNotHealthy(snap, d.Task, "Probe", "probe: ")}
		if d.Controller() {
			out.Controllers[snap.Alloc.ID] = info
		}
		if d.Node() {
			out.Nodes[snap.Alloc.ID] = info
		}
		if !seen[snap.Alloc.ID] {
			seen[snap.Alloc.ID] = true
			out.Allocations = append(out.Allocations, Allocation(snap, d.Dir).Stub())
		}
	}
	sort.Slice(out.Allocations, func(i, j int) bool { return out.Allocations[i].CreateTime > out.Allocations[j].CreateTime })
	return out
}
