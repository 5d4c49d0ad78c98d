package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/internal/mountinfo"
)

// mockVolume is what mockcsi's state.json says of one volume: the
// controller and node sides of its publications.
type mockVolume struct {
	Name      string
	Published map[string]json.RawMessage
	Staged    map[string]json.RawMessage
	Targets   map[string]json.RawMessage
}

// mockState reads mockcsi's state.json.
func (p *volPlugin) mockState(t *testing.T) map[string]*mockVolume {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p.stateDir, "state.json"))
	if err != nil {
		return nil
	}
	var st struct {
		Volumes map[string]*mockVolume
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return nil // mid-rewrite: the caller polls again
	}
	return st.Volumes
}

// waitMock polls mockcsi's state until cond holds for the named volume:
// the plugin announces nothing, so this is the one place a test polls.
func (p *volPlugin) waitMock(t *testing.T, name, what string, cond func(v *mockVolume) bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, v := range p.mockState(t) {
			if v.Name == name && cond(v) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("plugin %s: volume %s never reached %q; state: %+v", p.id, name, what, p.mockState(t))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// mockClean reports whether the plugin holds no publication of the volume.
func mockClean(v *mockVolume) bool {
	return len(v.Published) == 0 && len(v.Staged) == 0 && len(v.Targets) == 0
}

// TestVolumeClaimKill9Steps kills the agent with SIGKILL after each step of
// a claim and of a release has done its work at the plugin and before the
// agent heard the answer (MOCKCSI_DELAY holds the answer back). The new
// agent converges: the task runs with its volume, then after the stop the
// plugin holds nothing, no mount is left and no claim is stuck. Each step
// was made once, or twice for the one interrupted; mockcsi itself refuses
// steps out of order (a publish before the stage, an unstage while
// published), so success proves the order.
func TestVolumeClaimKill9Steps(t *testing.T) {
	steps := []struct {
		rpc     string
		release bool
		done    func(v *mockVolume) bool
	}{
		{"ControllerPublishVolume", false, func(v *mockVolume) bool { return len(v.Published) == 1 }},
		{"NodeStageVolume", false, func(v *mockVolume) bool { return len(v.Staged) == 1 }},
		{"NodePublishVolume", false, func(v *mockVolume) bool { return len(v.Targets) == 1 }},
		{"NodeUnpublishVolume", true, func(v *mockVolume) bool { return len(v.Targets) == 0 }},
		{"NodeUnstageVolume", true, func(v *mockVolume) bool { return len(v.Staged) == 0 }},
		{"ControllerUnpublishVolume", true, func(v *mockVolume) bool { return len(v.Published) == 0 }},
	}
	for i, st := range steps {
		t.Run(st.rpc, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, csiConfig)
			a1 := e.start()
			plug := fmt.Sprintf("ks%d", i)
			p := startVolPlugin(t, e, a1, "go_plugin", plug, map[string]string{
				"MOCKCSI_DELAY":        fmt.Sprintf("%s:%s", st.rpc, slowCall),
				"MOCKCSI_RECORD_CALLS": "1",
			})
			createVolume(t, e, "kv", plug, "single-node-writer")
			dest := filepath.Join(e.root, "mnt")
			job := jobHCL("kj", volumeBlock("data", "kv", "single-node-writer", false),
				claimTask("t", e.markerFor("kj"), fmt.Sprintf(`echo ok > %s/f`, dest), volumeMount("data", dest, false)))
			alloc := a1.runJob("kj", job)[0]

			a2 := a1
			if !st.release {
				p.waitMock(t, "kv", st.rpc+" done", st.done)
				a1.kill()
				a2 = e.start()
			}
			a2.waitAlloc(alloc, "running with its volume", running("t"))
			if c := a2.claimsOf(t, "kv"); len(c) != 1 || c[0].State != "published" {
				t.Fatalf("claims after the restart: %+v", c)
			}
			a3 := a2
			if st.release {
				p.waitMock(t, "kv", "mounted", func(v *mockVolume) bool { return len(v.Targets) == 1 })
				stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := a2.client.StopJob(stopCtx, "kj", false); err != nil {
					t.Fatal(err)
				}
				p.waitMock(t, "kv", st.rpc+" done", st.done)
				a2.kill()
				a3 = e.start()
			} else {
				a3.stopJob("kj")
			}
			a3.waitVolume("kv", "claims released", noClaims)
			p.waitMock(t, "kv", "nothing published", mockClean)
			if m := e.volumeMounts(t); len(m) != 0 {
				t.Fatalf("mounts left: %v", m)
			}
			c := p.calls(t, nil)
			for _, rpc := range []string{"ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume",
				"NodeUnpublishVolume", "NodeUnstageVolume", "ControllerUnpublishVolume"} {
				want := int64(1)
				if rpc == st.rpc {
					want = 2
				}
				if got := c.Calls[rpc]; got < 1 || got > want {
					t.Errorf("%s called %d times, want 1..%d: %v", rpc, got, want, c.Calls)
				}
			}
		})
	}
}

// TestVolumeClaimSharedKill9: two allocations share a multi-node-multi-writer
// volume (one staging, two publications); the agent is killed and restarted
// (re-adopting both with no node call at all), then one stops: the volume
// stays staged (no NodeUnstage, Nomad #25813) and the other keeps reading
// and writing; then the other stops: unpublished, unstaged, released.
func TestVolumeClaimSharedKill9(t *testing.T) {
	e := newEnv(t, csiConfig)
	a1 := e.start()
	p := startVolPlugin(t, e, a1, "go_plugin", "shared", map[string]string{"MOCKCSI_RECORD_CALLS": "1"})
	createVolume(t, e, "sv", "shared", "multi-node-multi-writer")

	dest := filepath.Join(e.root, "mnt")
	// Each task writes its own file in the volume every 50 ms and copies
	// the other's into its allocation dir, where the test reads it.
	writer := func(me, other string) string {
		return fmt.Sprintf(`while true; do date +%%s%%N > %[1]s/%[2]s; cat %[1]s/%[3]s > "$NOMAD_ALLOC_DIR/seen.tmp" 2>/dev/null && mv "$NOMAD_ALLOC_DIR/seen.tmp" "$NOMAD_ALLOC_DIR/seen"; sleep 0.05; done`,
			dest, me, other)
	}
	run := func(a *agentProc, job, me, other string) string {
		tk := shTask("t", e.markerFor(job), writer(me, other))
		tk.extra = volumeMount("data", dest, false)
		return a.runJob(job, jobHCL(job, volumeBlock("data", "sv", "multi-node-multi-writer", false), tk))[0]
	}
	allocA := run(a1, "ja", "a", "b")
	allocB := run(a1, "jb", "b", "a")
	e.allocFile(t, a1, allocA, "seen") // A sees B's writes: one volume
	e.allocFile(t, a1, allocB, "seen")
	before := p.calls(t, nil)
	if before.Calls["NodeStageVolume"] != 1 || before.Calls["NodePublishVolume"] != 2 {
		t.Fatalf("two allocations of one usage: want 1 NodeStage and 2 NodePublish, got %v", before.Calls)
	}

	a1.kill()
	a2 := e.start()
	a2.waitAlloc(allocA, "re-adopted", hasEvents("t", "Reattached", 1))
	a2.waitAlloc(allocB, "re-adopted", hasEvents("t", "Reattached", 1))
	if c := p.calls(t, nil); !sameNodeCalls(before, c) {
		t.Fatalf("restoring allocations with mounted volumes made node calls: before %v, after %v", before.Calls, c.Calls)
	}

	// The host's mounts and unmounts under the CSI mount root reach a
	// task's namespace made before them (the agent keeps the root shared,
	// the task's namespace is its slave): an unstage on the host never
	// leaves a copy mounted in a task.
	nsB := fmt.Sprintf("/proc/%d/mountinfo", lastPid(a2.waitAlloc(allocB, "running", running("t")), "t"))
	probe := filepath.Join(e.dataDir, "csi", "probe")
	if err := os.MkdirAll(probe, 0o700); err != nil {
		t.Fatal(err)
	}
	inB := func() bool {
		mps, err := mountinfo.Points(nsB)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(mps, probe)
	}
	if err := unix.Mount("tmpfs", probe, "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	if !inB() {
		t.Fatal("a mount made on the host under the CSI mount root did not reach the task's namespace")
	}
	if err := unix.Unmount(probe, 0); err != nil {
		t.Fatal(err)
	}
	if inB() {
		t.Fatal("an unmount on the host under the CSI mount root did not reach the task's namespace")
	}
	if err := os.Remove(probe); err != nil {
		t.Fatal(err)
	}

	a2.stopJob("ja")
	a2.waitVolume("sv", "A's claim released", func(v *api.CSIVolume, err error) bool { return err == nil && len(v.Claims) == 1 })

	c := p.calls(t, nil)
	if c.Calls["NodeUnpublishVolume"] != 1 || c.Calls["NodeUnstageVolume"] != 0 || c.Calls["ControllerUnpublishVolume"] != 0 {
		t.Fatalf("after A stopped (B still running): %v; want one NodeUnpublish and no unstage", c.Calls)
	}
	// B still reads and writes: its own file advances in the volume.
	target := a2.claimsOf(t, "sv")[0].TargetPath
	first, _ := os.ReadFile(filepath.Join(target, "b"))
	a2.mustWait("B writes after A stopped", 20*time.Second, func(context.Context) (bool, error) {
		now, err := os.ReadFile(filepath.Join(target, "b"))
		return err == nil && len(now) > 0 && string(now) != string(first), nil
	}, api.TopicAllocation)

	a2.stopJob("jb")
	a2.waitVolume("sv", "all claims released", noClaims)
	p.waitMock(t, "sv", "nothing published", mockClean)
	c = p.calls(t, nil)
	if c.Calls["NodeUnpublishVolume"] != 2 || c.Calls["NodeUnstageVolume"] != 1 || c.Calls["ControllerUnpublishVolume"] != 1 {
		t.Fatalf("after both stopped: %v; want 2 NodeUnpublish, 1 NodeUnstage, 1 ControllerUnpublish", c.Calls)
	}
	if m := e.volumeMounts(t); len(m) != 0 {
		t.Fatalf("mounts left: %v", m)
	}
}

// sameNodeCalls reports whether no volume call was made between two
// records (fingerprints and probes are not volume calls).
func sameNodeCalls(a, b *mockCalls) bool {
	for _, rpc := range []string{"ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume",
		"NodeUnpublishVolume", "NodeUnstageVolume", "ControllerUnpublishVolume"} {
		if a.Calls[rpc] != b.Calls[rpc] {
			return false
		}
	}
	return true
}
