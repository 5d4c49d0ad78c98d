package jobs

import (
	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// A CSI plugin exists for the CSI manager once an allocation registered it,
// which a plugin does only once healthy. A plugin whose tasks are starting,
// failing their probes or waiting out a restart delay would then not exist
// at all: `plugin status` would not list it. The reconciler also knows the
// plugins that allocations meant to run declare (csi_plugin blocks, and the
// plugin block of a go_plugin task's config for other types), so the
// agent shows those that are not registered with 0 healthy and why.

// DeclaredTask is one task of a running allocation that declares a plugin.
type DeclaredTask struct {
	Snap *taskrunner.AllocSnapshot
	// Dir is the allocation's directory.
	Dir  string
	Task string
	// Type is the csi_plugin type (monolith, node, controller) or, for
	// other plugins, the registry type.
	Type string
}

// Controller reports whether the task serves a CSI plugin's controller.
func (d DeclaredTask) Controller() bool {
	return d.Type == jobspec.CSIPluginTypeController || d.Type == jobspec.CSIPluginTypeMonolith
}

// Node reports whether the task serves a CSI plugin's node.
func (d DeclaredTask) Node() bool {
	return d.Type == jobspec.CSIPluginTypeNode || d.Type == jobspec.CSIPluginTypeMonolith
}

// Serves reports whether the task serves the CSI registry type t's half.
func (d DeclaredTask) Serves(t string) bool {
	return t == dynamic.PluginTypeCSIController && d.Controller() || t == dynamic.PluginTypeCSINode && d.Node()
}

// GenericKey is how plugins that are not CSI are keyed here and in the
// API's IDs: "TYPE/NAME".
func GenericKey(typ, name string) string { return typ + "/" + name }

// DeclaredCSI maps CSI plugin IDs to the tasks that declare them, of
// allocations that should run and have not finished.
func (r *Reconciler) DeclaredCSI() map[string][]DeclaredTask {
	out := map[string][]DeclaredTask{}
	r.eachDeclaringTask(func(d DeclaredTask, t *jobspec.Task) {
		if p := t.CSIPluginConfig; p != nil {
			d.Type = p.Type
			out[p.ID] = append(out[p.ID], d)
		}
	})
	return out
}

// DeclaredGeneric maps "TYPE/NAME" of plugins that are not CSI to the
// go_plugin tasks that declare them (a plugin block in their config), of
// allocations that should run and have not finished.
func (r *Reconciler) DeclaredGeneric() map[string][]DeclaredTask {
	out := map[string][]DeclaredTask{}
	r.eachDeclaringTask(func(d DeclaredTask, t *jobspec.Task) {
		if p := t.GenericPlugin(); p != nil {
			d.Type = p.Type
			k := GenericKey(p.Type, t.Config.Plugin.Name)
			out[k] = append(out[k], d)
		}
	})
	return out
}

// eachDeclaringTask calls fn for every task of the allocations that should
// run and have not finished.
func (r *Reconciler) eachDeclaringTask(fn func(d DeclaredTask, t *jobspec.Task)) {
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
			fn(DeclaredTask{Snap: snap, Dir: ar.AllocDir(), Task: t.Name}, t)
		}
	}
}

// ExpectedCSI counts the tasks that serve a CSI plugin's half of registry
// type t.
func ExpectedCSI(t string, tasks []DeclaredTask) int {
	n := 0
	for _, d := range tasks {
		if d.Serves(t) {
			n++
		}
	}
	return n
}

// CountAllocs counts the allocations among declaring tasks (a group may
// not declare one plugin twice, but be exact).
func CountAllocs(tasks []DeclaredTask) int {
	seen := map[string]bool{}
	for _, d := range tasks {
		seen[d.Snap.Alloc.ID] = true
	}
	return len(seen)
}
