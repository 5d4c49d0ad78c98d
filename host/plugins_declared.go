package host

import (
	"sort"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/apiconv"
	"github.com/pluginhost/pluginhost/host/jobs"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// A CSI plugin exists for the CSI manager once an allocation registered it,
// which a plugin does only once healthy. A plugin whose tasks are starting,
// failing their probes or waiting out a restart delay would then not exist
// at all: `plugin status` would not list it. The agent also knows
// the plugins that allocations meant to run declare (csi_plugin blocks, and
// the plugin block of a go_plugin task's config for other types), and shows
// those that are not registered with 0 healthy and why.

// declaredTask is one task of a running allocation that declares a plugin.
type declaredTask struct {
	snap *taskrunner.AllocSnapshot
	dir  string // the allocation's directory
	task string
	typ  string // csi_plugin type: monolith, node, controller
}

// declaredPlugins maps CSI plugin IDs to the tasks that declare them, of
// allocations that should run and have not finished.
func declaredPlugins(r *jobs.Reconciler) map[string][]declaredTask {
	out := map[string][]declaredTask{}
	eachDeclaringTask(r, func(d declaredTask, t *jobspec.Task) {
		if p := t.CSIPluginConfig; p != nil {
			d.typ = p.Type
			out[p.ID] = append(out[p.ID], d)
		}
	})
	return out
}

// genericKey is how generic plugins are keyed here and in the API's IDs:
// "TYPE/NAME".
func genericKey(typ, name string) string { return typ + "/" + name }

// declaredGeneric maps "TYPE/NAME" of plugins that are not CSI to the
// go_plugin tasks that declare them (a plugin block in their config), of
// allocations that should run and have not finished.
func declaredGeneric(r *jobs.Reconciler) map[string][]declaredTask {
	out := map[string][]declaredTask{}
	eachDeclaringTask(r, func(d declaredTask, t *jobspec.Task) {
		if typ := genericPluginType(t); typ != "" {
			k := genericKey(typ, t.Config.Plugin.Name)
			d.typ = typ
			out[k] = append(out[k], d)
		}
	})
	return out
}

// eachDeclaringTask calls fn for every task of the allocations that should
// run and have not finished.
func eachDeclaringTask(r *jobs.Reconciler, fn func(d declaredTask, t *jobspec.Task)) {
	for _, ar := range r.All() {
		select {
		case <-ar.Done():
			continue
		default:
		}
		snap := ar.State()
		al := snap.Alloc
		if al.DesiredStatus != state.AllocDesiredStatusRun {
			continue
		}
		g := al.Job.Group(al.TaskGroup)
		if g == nil {
			continue
		}
		for _, t := range g.Tasks {
			fn(declaredTask{snap: snap, dir: ar.AllocDir(), task: t.Name}, t)
		}
	}
}

func (d declaredTask) controller() bool {
	return d.typ == jobspec.CSIPluginTypeController || d.typ == jobspec.CSIPluginTypeMonolith
}

func (d declaredTask) node() bool {
	return d.typ == jobspec.CSIPluginTypeNode || d.typ == jobspec.CSIPluginTypeMonolith
}

// unregisteredStub lists a declared plugin the manager does not know.
func unregisteredStub(id string, tasks []declaredTask) *api.CSIPluginListStub {
	s := &api.CSIPluginListStub{ID: id}
	for _, d := range tasks {
		if d.controller() {
			s.ControllersExpected++
		}
		if d.node() {
			s.NodesExpected++
		}
	}
	return s
}

// unregisteredPlugin describes a declared plugin that no allocation has
// registered: every declaring allocation unhealthy, with why.
func unregisteredPlugin(id string, tasks []declaredTask) *api.CSIPlugin {
	stub := unregisteredStub(id, tasks)
	out := &api.CSIPlugin{ID: id, Controllers: map[string]*api.CSIInfo{}, Nodes: map[string]*api.CSIInfo{},
		ControllersExpected: stub.ControllersExpected, NodesExpected: stub.NodesExpected}
	seen := map[string]bool{}
	for _, d := range tasks {
		snap := d.snap
		info := &api.CSIInfo{PluginID: id, AllocID: snap.Alloc.ID, HealthDescription: apiconv.WhyNotHealthy(snap, d.task, "Probe", "probe: ")}
		if d.controller() {
			out.Controllers[snap.Alloc.ID] = info
		}
		if d.node() {
			out.Nodes[snap.Alloc.ID] = info
		}
		if !seen[snap.Alloc.ID] {
			seen[snap.Alloc.ID] = true
			out.Allocations = append(out.Allocations, apiconv.Allocation(snap, d.dir).Stub())
		}
	}
	sort.Slice(out.Allocations, func(i, j int) bool { return out.Allocations[i].CreateTime > out.Allocations[j].CreateTime })
	return out
}
