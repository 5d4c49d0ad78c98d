package host

import (
	"fmt"
	"sort"
	"strings"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/csiplugin"
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
	alloc *allocEntry
	task  string
	typ   string // csi_plugin type: monolith, node, controller
}

// declaredPlugins maps CSI plugin IDs to the tasks that declare them, of
// allocations that should run and have not finished.
func (a *Agent) declaredPlugins() map[string][]declaredTask {
	out := map[string][]declaredTask{}
	a.eachDeclaringTask(func(e *allocEntry, t *jobspec.Task) {
		if p := t.CSIPluginConfig; p != nil {
			out[p.ID] = append(out[p.ID], declaredTask{alloc: e, task: t.Name, typ: p.Type})
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
func (a *Agent) declaredGeneric() map[string][]declaredTask {
	out := map[string][]declaredTask{}
	a.eachDeclaringTask(func(e *allocEntry, t *jobspec.Task) {
		if typ := genericPluginType(t); typ != "" {
			k := genericKey(typ, t.Config.Plugin.Name)
			out[k] = append(out[k], declaredTask{alloc: e, task: t.Name, typ: typ})
		}
	})
	return out
}

// eachDeclaringTask calls fn for every task of the allocations that should
// run and have not finished.
func (a *Agent) eachDeclaringTask(fn func(e *allocEntry, t *jobspec.Task)) {
	a.mu.Lock()
	entries := make([]*allocEntry, 0, len(a.allocs))
	for _, e := range a.allocs {
		entries = append(entries, e)
	}
	a.mu.Unlock()
	for _, e := range entries {
		if isDone(e) {
			continue
		}
		al := e.runner.State().Alloc
		if al.DesiredStatus != state.AllocDesiredStatusRun {
			continue
		}
		g := groupOf(al.Job, al.TaskGroup)
		if g == nil {
			continue
		}
		for _, t := range g.Tasks {
			fn(e, t)
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
		snap := d.alloc.runner.State()
		info := &api.CSIInfo{PluginID: id, AllocID: snap.Alloc.ID, HealthDescription: whyNotHealthy(snap, d.task, "Probe", "probe: ")}
		if d.controller() {
			out.Controllers[snap.Alloc.ID] = info
		}
		if d.node() {
			out.Nodes[snap.Alloc.ID] = info
		}
		if !seen[snap.Alloc.ID] {
			seen[snap.Alloc.ID] = true
			out.Allocations = append(out.Allocations, allocation(d.alloc.runner).Stub())
		}
	}
	sort.Slice(out.Allocations, func(i, j int) bool { return out.Allocations[i].CreateTime > out.Allocations[j].CreateTime })
	return out
}

// whyNotHealthy says, from a plugin task's latest events, why its plugin
// is not registered: starting (waiting for the answer to check), its last
// probe error, or a restart pending (with the attempt the restart policy
// is at).
//
// prefix goes before a failed check's message: "probe: " for a CSI
// plugin's Probe; "" for a generic plugin's, whose message already says
// what it asked.
func whyNotHealthy(snap *taskrunner.AllocSnapshot, task, check, prefix string) string {
	for _, t := range snap.Tasks {
		if t.Name != task {
			continue
		}
		if t.State.State == state.TaskStateDead {
			return "task is dead"
		}
		for i := len(t.Events) - 1; i >= 0; i-- {
			ev := t.Events[i]
			switch ev.Type {
			case csiplugin.EventPluginNotHealthy, csiplugin.EventPluginUnhealthy:
				return prefix + oneLine(ev.Message)
			case taskrunner.EventRestarting:
				return fmt.Sprintf("restart pending (%d restarts so far): %s", t.State.Restarts, oneLine(ev.Message))
			case taskrunner.EventStarted, taskrunner.EventReattached:
				return "starting: waiting for the plugin to answer " + check
			}
		}
		return "task " + t.State.State
	}
	return "task not found"
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }
