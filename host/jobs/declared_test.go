package jobs

import (
	"testing"

	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/jobspec"
)

// The plugins that allocations meant to run declare, keyed as the API keys
// them: a CSI plugin by ID with each task's half, another type by
// TYPE/NAME; a finished allocation declares nothing.
func TestDeclaredPlugins(t *testing.T) {
	w := newWorld()
	r := newTestReconciler(t, w)
	job := testJob(2, func(j *jobspec.Job) {
		j.TaskGroups[0].Tasks = []*jobspec.Task{
			{Name: "csi", Driver: "raw_exec", CSIPluginConfig: &jobspec.TaskCSIPluginConfig{ID: "p", Type: jobspec.CSIPluginTypeNode}},
			{Name: "kv", Driver: jobspec.DriverGoPlugin, Config: &jobspec.TaskConfig{Command: "/bin/kv",
				Plugin: &jobspec.GoPluginProvides{Type: "kv", Name: "main"}}},
			{Name: "plain", Driver: "raw_exec"},
		}
	})
	submit(t, r, w, job)
	csi := r.DeclaredCSI()
	if len(csi) != 1 || len(csi["p"]) != 2 || !csi["p"][0].Node() || csi["p"][0].Controller() {
		t.Fatalf("DeclaredCSI = %+v", csi)
	}
	if n := ExpectedCSI(dynamic.PluginTypeCSINode, csi["p"]); n != 2 {
		t.Errorf("ExpectedCSI(node) = %d", n)
	}
	if n := ExpectedCSI(dynamic.PluginTypeCSIController, csi["p"]); n != 0 {
		t.Errorf("ExpectedCSI(controller) = %d", n)
	}
	gen := r.DeclaredGeneric()
	if len(gen) != 1 || CountAllocs(gen[GenericKey("kv", "main")]) != 2 {
		t.Fatalf("DeclaredGeneric = %+v", gen)
	}
	// One allocation finishes: it declares nothing any more.
	w.mu.Lock()
	first := w.runners[0]
	w.mu.Unlock()
	first.end()
	if n := CountAllocs(r.DeclaredGeneric()[GenericKey("kv", "main")]); n != 1 {
		t.Errorf("after one allocation ended, %d declare kv/main", n)
	}
}
