package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestNodeAndControllerTasksInOneGroup: two raw_exec CSI plugin tasks of
// one group (a node and a controller of the same plugin) each get their
// own socket and both become healthy without a restart. They used to share
// <alloc>/csi.sock: the second failed to bind ("endpoint in use"), its
// supervisor probed the first task and registered the node at the
// controller's socket.
func TestNodeAndControllerTasksInOneGroup(t *testing.T) {
	e := newEnv(t, csiConfig)
	a := e.start()
	w := a.watchPlugins()
	task := func(name, typ string) taskSpec {
		tk := mockcsiRawExec(t, name, e.markerFor(name))
		tk.args = []string{"--endpoint=${CSI_ENDPOINT}", "--node-id=e2e"}
		tk.extra = fmt.Sprintf("      csi_plugin {\n        id = \"two\"\n        type = %q\n      }\n", typ)
		return tk
	}
	ids := a.runJob("two", jobHCL("two", restartPolicy, task("node", "node"), task("controller", "controller")))
	w.until("both halves healthy", func() bool {
		return w.healthy[ids[0]+"/csi-node"] && w.healthy[ids[0]+"/csi-controller"]
	})
	al, err := a.client.Allocation(context.Background(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	endpoints := map[string]string{}
	for _, name := range []string{"node", "controller"} {
		if ts := al.TaskStates[name]; ts == nil || ts.State != "running" || ts.Restarts != 0 {
			t.Fatalf("task %s: %+v", name, ts)
		}
		pids := topMarked(e.markerFor(name))
		if len(pids) != 1 {
			t.Fatalf("task %s: %d processes", name, len(pids))
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pids[0]))
		if err != nil {
			t.Fatal(err)
		}
		for _, arg := range strings.Split(string(raw), "\x00") {
			if ep, ok := strings.CutPrefix(arg, "--endpoint=unix://"); ok {
				endpoints[name] = ep
			}
		}
		if _, err := os.Stat(endpoints[name]); err != nil {
			t.Fatalf("task %s's socket: %v", name, err)
		}
	}
	if endpoints["node"] == endpoints["controller"] || !strings.HasSuffix(endpoints["node"], "/t0/csi.sock") ||
		!strings.HasSuffix(endpoints["controller"], "/t1/csi.sock") {
		t.Fatalf("endpoints %v: want one socket directory per task", endpoints)
	}
	p := e.pluginStatus("two")
	if p.NodesHealthy != 1 || p.ControllersHealthy != 1 {
		t.Fatalf("plugin status: nodes %d/%d controllers %d/%d", p.NodesHealthy, p.NodesExpected, p.ControllersHealthy, p.ControllersExpected)
	}
	a.stopAndCheckNoOrphans("two", e.markerFor("node"), e.markerFor("controller"))
	for name, ep := range endpoints {
		if _, err := os.Stat(ep); !os.IsNotExist(err) {
			t.Errorf("task %s's socket %s left behind: %v", name, ep, err)
		}
	}
}
