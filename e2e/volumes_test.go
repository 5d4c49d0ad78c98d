package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/volumespec"
)

// Volume tests: the real agent and mockcsi (under go_plugin and raw_exec)
// through the CLI and the API. Each plugin gets an explicit --state-dir in
// the test's root, so that the test reads mockcsi's calls.json and state
// without guessing the task dir.

const (
	mib = int64(1) << 20
	gib = int64(1) << 30
)

// volPlugin is one mockcsi plugin job started for volume tests.
type volPlugin struct {
	id       string
	alloc    string
	stateDir string
}

// startVolPlugin runs mockcsi as the monolith plugin id under drv, with
// env (MOCKCSI_* faults), and waits until both halves are healthy.
func startVolPlugin(t testing.TB, e *env, a *agentProc, drv, id string, env map[string]string) *volPlugin {
	t.Helper()
	w := a.watchPlugins()
	p := &volPlugin{id: id, stateDir: filepath.Join(e.root, "state-"+id)}
	tk := csiTask(t, drv, "plugin", e.markerFor(id), id, "30s")
	tk.args = append(tk.args, "--state-dir="+p.stateDir)
	tk.env = env
	p.alloc = a.runJob(id, jobHCL(id, restartPolicy, tk))[0]
	w.waitHealthy(p.alloc)
	return p
}

// mockCalls is mockcsi's calls.json.
type mockCalls struct {
	Overlaps         int64
	OverlapsByVolume map[string]int64
	MaxParallel      int
	Calls            map[string]int64
	InFlight         int
}

// calls waits for a calls.json with no call in flight that satisfies cond
// (nil: any) and returns it. mockcsi announces nothing when it rewrites
// the file, so this polls it, with a deadline.
func (p *volPlugin) calls(t testing.TB, cond func(*mockCalls) bool) *mockCalls {
	t.Helper()
	var last *mockCalls
	var lastErr error
	deadline := time.Now().Add(15 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(p.stateDir, "calls.json"))
		if err == nil {
			var c mockCalls
			if err = json.Unmarshal(b, &c); err == nil {
				last = &c
				if c.InFlight == 0 && (cond == nil || cond(&c)) {
					return &c
				}
			}
		}
		lastErr = err
		if time.Now().After(deadline) {
			t.Fatalf("plugin %s: calls.json never settled as wanted: last %+v (error %v)", p.id, last, lastErr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// volSpec is a volume file for plugin with the given capacity range.
func volSpec(id, plugin, capMin, capMax string) string {
	return fmt.Sprintf(`id        = %q
name      = %q
type      = "csi"
plugin_id = %q
capacity_min = %q
capacity_max = %q
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
`, id, id, plugin, capMin, capMax)
}

// waitVolume waits, on Volume events, until pred holds for the volume (v
// is nil and err set when the agent does not know it).
func (a *agentProc) waitVolume(id, what string, pred func(v *api.CSIVolume, err error) bool) *api.CSIVolume {
	a.t.Helper()
	var last *api.CSIVolume
	var lastErr error
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := a.waitFor(ctx, "volume "+id+": "+what, func(ctx context.Context) (bool, error) {
		last, lastErr = a.client.Volume(ctx, id)
		return pred(last, lastErr), nil
	}, api.TopicVolume)
	if err != nil {
		a.t.Fatalf("%v\nvolume: %+v (error %v)\nagent output:\n%s", err, last, lastErr, tail(a.output(), 4000))
	}
	return last
}

func volReady(v *api.CSIVolume, err error) bool {
	return err == nil && v.State == api.VolumeStateReady
}

func volGone(_ *api.CSIVolume, err error) bool { return errors.Is(err, api.ErrNotFound) }

// externals lists the plugin's volumes through the agent (ListVolumes).
func (a *agentProc) externals(plugin string) []*api.CSIVolumeExternalStub {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ext, err := a.client.ExternalVolumes(ctx, plugin)
	if err != nil {
		a.t.Fatalf("volumes of plugin %s: %v", plugin, err)
	}
	return ext
}

// pollExternals polls the plugin's volume list until cond holds: the
// plugin announces nothing when it has committed a volume's creation or
// deletion but holds back its answer (MOCKCSI_DELAY).
func (a *agentProc) pollExternals(plugin, what string, cond func([]*api.CSIVolumeExternalStub) bool) {
	a.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for ext := a.externals(plugin); !cond(ext); ext = a.externals(plugin) {
		if time.Now().After(deadline) {
			a.t.Fatalf("plugin %s: %s: never happened; it lists %s", plugin, what, externalIDs(ext))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func externalIDs(ext []*api.CSIVolumeExternalStub) string {
	var s []string
	for _, x := range ext {
		s = append(s, fmt.Sprintf("%s(vol %q, %d B)", x.ExternalID, x.VolumeID, x.CapacityBytes))
	}
	return "[" + strings.Join(s, " ") + "]"
}

// mustCLI runs the CLI and wants exit 0 and every one of wants in stdout.
func (e *env) mustCLI(t *testing.T, wants []string, args ...string) cliResult {
	t.Helper()
	r := e.cli(args...)
	if r.code != 0 {
		t.Fatalf("pluginhost %s: exit %d:\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	for _, w := range wants {
		if !strings.Contains(r.stdout, w) {
			t.Fatalf("pluginhost %s: output lacks %q:\n%s%s", strings.Join(args, " "), w, r.stdout, r.stderr)
		}
	}
	return r
}

// setKey replaces a top-level `key = ...` line of an HCL file.
func setKey(t *testing.T, src, key, value string) string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key) + `\s*=.*$`)
	if !re.MatchString(src) {
		t.Fatalf("volume file has no %s line:\n%s", key, src)
	}
	return re.ReplaceAllLiteralString(src, fmt.Sprintf("%s = %q", key, value))
}

// TestVolumeCLILifecycle drives a volume through the CLI under both
// drivers: init, create (followed until ready), status table and JSON,
// snapshot create/list/delete, expand by creating again with a larger
// capacity_min, deregister (the plugin keeps it, `status -verbose` lists it
// as not registered), register it back, and delete until the plugin has
// nothing left.
func TestVolumeCLILifecycle(t *testing.T) {
	for _, drv := range []string{"go_plugin", "raw_exec"} {
		t.Run(drv, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, csiConfig)
			a := e.start()
			plug := "lc-" + strings.ReplaceAll(drv, "_", "-")
			startVolPlugin(t, e, a, drv, plug, nil)

			file := filepath.Join(e.root, "vol.hcl")
			e.mustCLI(t, nil, "volume", "init", file)
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			src := string(b)
			for k, v := range map[string]string{"id": "v1", "name": "v1", "plugin_id": plug, "capacity_min": "1GiB", "capacity_max": "4GiB"} {
				src = setKey(t, src, k, v)
			}
			writeFile(t, file, src)
			e.mustCLI(t, []string{`Volume "v1" is ready`}, "volume", "create", file)

			var v api.CSIVolume
			mustJSON(t, e.cli("volume", "status", "-json", "v1"), &v)
			if v.State != api.VolumeStateReady || v.ExternalID == "" || v.Capacity < gib || v.PluginID != plug {
				t.Fatalf("volume status -json v1: state %q external ID %q capacity %d plugin %q; want ready, an ID, >= 1GiB, %s",
					v.State, v.ExternalID, v.Capacity, v.PluginID, plug)
			}
			e.mustCLI(t, []string{"v1", plug, volumespec.FormatBytes(v.Capacity), "ready"}, "volume", "status")

			// Snapshots.
			var snap api.CSISnapshot
			mustJSON(t, e.cli("volume", "snapshot", "create", "-json", "v1", "snap1"), &snap)
			if snap.ID == "" || snap.SourceVolumeID != "v1" || snap.ExternalSourceVolumeID != v.ExternalID || snap.PluginID != plug {
				t.Fatalf("snapshot create -json: %+v; want an ID of volume v1 (%s) of plugin %s", snap, v.ExternalID, plug)
			}
			e.mustCLI(t, []string{snap.ID, "v1", v.ExternalID}, "volume", "snapshot", "list", "-plugin", plug)
			e.mustCLI(t, []string{"Deleted snapshot " + snap.ID}, "volume", "snapshot", "delete", plug, snap.ID)
			var snaps []*api.CSISnapshot
			mustJSON(t, e.cli("volume", "snapshot", "list", "-json", "-plugin", plug), &snaps)
			if len(snaps) != 0 {
				t.Fatalf("snapshots after delete: %+v", snaps)
			}

			// Expand: the same file with a larger capacity_min.
			writeFile(t, file, setKey(t, src, "capacity_min", "2GiB"))
			e.mustCLI(t, []string{`Volume "v1" is ready`}, "volume", "create", file)
			var v2 api.CSIVolume
			mustJSON(t, e.cli("volume", "status", "-json", "v1"), &v2)
			if v2.Capacity < 2*gib || v2.Capacity <= v.Capacity || v2.ExternalID != v.ExternalID {
				t.Fatalf("after expanding to 2GiB: capacity %d (was %d), external ID %q (was %q)", v2.Capacity, v.Capacity, v2.ExternalID, v.ExternalID)
			}
			if ext := a.externals(plug); len(ext) != 1 || ext[0].CapacityBytes != v2.Capacity || ext[0].VolumeID != "v1" {
				t.Fatalf("the plugin lists %s; want v1 alone at %d bytes", externalIDs(ext), v2.Capacity)
			}

			// A volume the plugin has and the agent does not: create,
			// then deregister.
			file2 := filepath.Join(e.root, "v2.hcl")
			writeFile(t, file2, volSpec("v2", plug, "1MiB", "1GiB"))
			e.mustCLI(t, []string{`Volume "v2" is ready`}, "volume", "create", file2)
			var v3 api.CSIVolume
			mustJSON(t, e.cli("volume", "status", "-json", "v2"), &v3)
			e.mustCLI(t, []string{`Volume "v2" is gone`}, "volume", "deregister", "v2")
			r := e.mustCLI(t, []string{"Volumes of plugin " + plug + " not registered", v3.ExternalID}, "volume", "status", "-verbose")
			if _, unreg, _ := strings.Cut(r.stdout, "not registered"); strings.Contains(unreg, v.ExternalID) {
				t.Fatalf("status -verbose lists the registered v1 (%s) as not registered:\n%s", v.ExternalID, r.stdout)
			}
			// Register it back, and delete both through the agent.
			reg := filepath.Join(e.root, "v2reg.hcl")
			writeFile(t, reg, volSpec("v2", plug, "1MiB", "1GiB")+fmt.Sprintf("external_id = %q\n", v3.ExternalID))
			e.mustCLI(t, []string{`Volume "v2" is ready`}, "volume", "register", reg)
			for _, id := range []string{"v1", "v2"} {
				e.mustCLI(t, []string{fmt.Sprintf("Volume %q is gone", id)}, "volume", "delete", id)
			}
			if ext := a.externals(plug); len(ext) != 0 {
				t.Fatalf("after deleting every volume the plugin still lists %s", externalIDs(ext))
			}
			var list []*api.CSIVolumeListStub
			mustJSON(t, e.cli("volume", "status", "-json"), &list)
			if len(list) != 0 {
				t.Fatalf("volume status -json after deleting everything: %+v", list)
			}
		})
	}
}

// slowCall is mockcsi's MOCKCSI_DELAY for the kill tests: the window in
// which the plugin has done a call's work and the agent has not recorded
// its outcome. Long enough for a 20 ms poll and a kill under -race.
const slowCall = 1500 * time.Millisecond

// TestVolumeKill9 kills the agent with SIGKILL after CreateVolume (then
// DeleteVolume) has done its work at the plugin and before the agent
// recorded the answer. The restarted agent finishes the work from its
// record: one volume at the plugin, the registered one, and after the
// delete none.
func TestVolumeKill9(t *testing.T) {
	for _, drv := range []string{"go_plugin", "raw_exec"} {
		t.Run(drv, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, csiConfig)
			a1 := e.start()
			plug := "k9-" + strings.ReplaceAll(drv, "_", "-")
			p := startVolPlugin(t, e, a1, drv, plug, map[string]string{
				"MOCKCSI_DELAY":        fmt.Sprintf("CreateVolume:%s,DeleteVolume:%s", slowCall, slowCall),
				"MOCKCSI_RECORD_CALLS": "1",
			})
			file := filepath.Join(e.root, "vol.hcl")
			writeFile(t, file, volSpec("kv", plug, "1MiB", "1GiB"))

			// Create: kill once the plugin has the volume.
			e.mustCLI(t, []string{`Volume "kv" recorded`}, "volume", "create", "-detach", file)
			a1.pollExternals(plug, "the volume is created", func(ext []*api.CSIVolumeExternalStub) bool { return len(ext) == 1 })
			if v, err := a1.client.Volume(context.Background(), "kv"); err != nil || v.State != api.VolumeStatePending || v.ExternalID != "" {
				t.Fatalf("before the kill the agent should not know the outcome yet: %+v, %v (MOCKCSI_DELAY too short?)", v, err)
			}
			a1.kill()
			a2 := e.start()
			v := a2.waitVolume("kv", "ready after the restart", volReady)
			ext := a2.externals(plug)
			if len(ext) != 1 || ext[0].ExternalID != v.ExternalID || ext[0].VolumeID != "kv" {
				t.Fatalf("after the restart the plugin lists %s; want exactly the registered %s", externalIDs(ext), v.ExternalID)
			}
			if c := p.calls(t, nil); c.Calls["CreateVolume"] < 2 {
				t.Fatalf("CreateVolume called %d times; want the first call and the restarted agent's retry", c.Calls["CreateVolume"])
			}

			// Delete: kill once the plugin has deleted it.
			e.mustCLI(t, []string{`Volume "kv": deleted recorded`}, "volume", "delete", "-detach", "kv")
			a2.pollExternals(plug, "the volume is deleted", func(ext []*api.CSIVolumeExternalStub) bool { return len(ext) == 0 })
			if v, err := a2.client.Volume(context.Background(), "kv"); err != nil || v.State != api.VolumeStatePending {
				t.Fatalf("before the kill the agent should not know the delete's outcome yet: %+v, %v", v, err)
			}
			a2.kill()
			a3 := e.start()
			a3.waitVolume("kv", "gone after the restart", volGone)
			if ext := a3.externals(plug); len(ext) != 0 {
				t.Fatalf("after the restart the plugin still lists %s", externalIDs(ext))
			}
			if c := p.calls(t, nil); c.Calls["DeleteVolume"] < 2 {
				t.Fatalf("DeleteVolume called %d times; want the first call and the restarted agent's retry", c.Calls["DeleteVolume"])
			}
		})
	}
}

// TestVolumeRetries: a plugin that fails CreateVolume three times with
// INTERNAL is retried until it succeeds, and `volume create` shows the
// attempts; one that answers INVALID_ARGUMENT fails at once, for good.
func TestVolumeRetries(t *testing.T) {
	e := newEnv(t, csiConfig)
	a := e.start()
	flaky := startVolPlugin(t, e, a, "go_plugin", "flaky", map[string]string{
		"MOCKCSI_FAIL": "CreateVolume:3:INTERNAL", "MOCKCSI_RECORD_CALLS": "1"})
	invalid := startVolPlugin(t, e, a, "go_plugin", "invalid", map[string]string{
		"MOCKCSI_FAIL": "CreateVolume:*:INVALID_ARGUMENT", "MOCKCSI_RECORD_CALLS": "1"})

	t.Run("retryable", func(t *testing.T) {
		file := filepath.Join(e.root, "flaky.hcl")
		writeFile(t, file, volSpec("fv", "flaky", "1MiB", "1GiB"))
		r := e.mustCLI(t, []string{"attempt 3", "injected failure of CreateVolume", `Volume "fv" is ready`}, "volume", "create", file)
		if strings.Contains(r.stdout, "attempt 4") {
			t.Fatalf("volume create shows a 4th failed attempt; 3 were injected:\n%s", r.stdout)
		}
		v := a.waitVolume("fv", "ready", volReady)
		if v.Attempts != 0 || v.LastError != "" {
			t.Fatalf("ready volume keeps attempts %d, last error %q", v.Attempts, v.LastError)
		}
		if c := flaky.calls(t, nil); c.Calls["CreateVolume"] != 4 {
			t.Fatalf("CreateVolume called %d times; want 3 failures and 1 success", c.Calls["CreateVolume"])
		}
	})

	t.Run("permanent", func(t *testing.T) {
		file := filepath.Join(e.root, "invalid.hcl")
		writeFile(t, file, volSpec("iv", "invalid", "1MiB", "1GiB"))
		r := e.cli("volume", "create", file)
		if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "injected failure of CreateVolume") || !strings.Contains(r.stderr, `Volume "iv" failed`) {
			t.Fatalf("volume create on a plugin answering INVALID_ARGUMENT: exit %d, want non-zero with the plugin's message:\n%s%s", r.code, r.stdout, r.stderr)
		}
		var v api.CSIVolume
		mustJSON(t, e.cli("volume", "status", "-json", "iv"), &v)
		if v.State != api.VolumeStateFailed || v.Attempts != 1 || !strings.Contains(v.LastError, "InvalidArgument") && !strings.Contains(v.LastError, "injected") {
			t.Fatalf("volume status -json iv: state %q attempts %d last error %q; want failed after 1 attempt with the plugin's error", v.State, v.Attempts, v.LastError)
		}
		// Nothing announces a retry that does not happen. The agent says
		// no work is queued; the queue's first retry would come after its
		// base delay (50 ms, jittered), so watching calls.json for ten
		// times that catches a retry the queue status failed to show.
		a.waitVolume("iv", "no work queued", func(v *api.CSIVolume, err error) bool { return err == nil && !v.Queued })
		if c := invalid.calls(t, nil); c.Calls["CreateVolume"] != 1 {
			t.Fatalf("CreateVolume called %d times; want 1", c.Calls["CreateVolume"])
		}
		for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			b, err := os.ReadFile(filepath.Join(invalid.stateDir, "calls.json"))
			if err != nil {
				t.Fatal(err)
			}
			var c mockCalls
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
			if c.Calls["CreateVolume"] != 1 {
				t.Fatalf("CreateVolume called %d times after the volume failed for good; want 1", c.Calls["CreateVolume"])
			}
		}
		if v, err := a.client.Volume(context.Background(), "iv"); err != nil || v.State != api.VolumeStateFailed || v.Attempts != 1 {
			t.Fatalf("volume iv after a while: %+v, %v; want still failed after 1 attempt", v, err)
		}
		// A failed volume that never reached the plugin is forgotten by
		// delete without a CSI call.
		e.mustCLI(t, []string{`Volume "iv" is gone`}, "volume", "delete", "iv")
	})
}

// TestVolumeRequestDuringWork sends a request for a volume while the
// plugin works on an earlier one (MOCKCSI_DELAY holds the answer): the
// later request must not be lost when the earlier call's outcome is
// recorded.
func TestVolumeRequestDuringWork(t *testing.T) {
	e := newEnv(t, csiConfig)
	a := e.start()
	plug := "rdw"
	startVolPlugin(t, e, a, "go_plugin", plug, map[string]string{"MOCKCSI_DELAY": "CreateVolume:" + slowCall.String()})
	ctx := context.Background()

	t.Run("expand during create", func(t *testing.T) {
		if _, err := a.client.CreateVolumeSource(ctx, "ex", "ex.hcl", []byte(volSpec("ex", plug, "1MiB", "1GiB"))); err != nil {
			t.Fatal(err)
		}
		a.pollExternals(plug, "ex created", func(ext []*api.CSIVolumeExternalStub) bool { return len(ext) == 1 })
		if _, err := a.client.CreateVolumeSource(ctx, "ex", "ex.hcl", []byte(volSpec("ex", plug, "2MiB", "1GiB"))); err != nil {
			t.Fatal(err)
		}
		v := a.waitVolume("ex", "expanded to 2MiB", func(v *api.CSIVolume, err error) bool {
			return err == nil && v.State != api.VolumeStatePending && !v.Queued
		})
		if v.State != api.VolumeStateReady || v.RequestedCapacityMin != 2*mib || v.Capacity < 2*mib {
			t.Fatalf("expand requested while the create was in flight: state %q, requested min %d, capacity %d; want ready with 2MiB",
				v.State, v.RequestedCapacityMin, v.Capacity)
		}
	})

	t.Run("delete during create", func(t *testing.T) {
		if _, err := a.client.CreateVolumeSource(ctx, "dl", "dl.hcl", []byte(volSpec("dl", plug, "1MiB", "1GiB"))); err != nil {
			t.Fatal(err)
		}
		a.pollExternals(plug, "dl created", func(ext []*api.CSIVolumeExternalStub) bool {
			for _, x := range ext {
				if x.VolumeID == "" {
					return true // dl: the agent does not know its ID yet
				}
			}
			return false
		})
		if _, err := a.client.DeleteVolume(ctx, "dl"); err != nil {
			t.Fatal(err)
		}
		a.waitVolume("dl", "gone", func(v *api.CSIVolume, err error) bool {
			return volGone(v, err) || err == nil && v.State != api.VolumeStatePending && !v.Queued
		})
		if v, err := a.client.Volume(ctx, "dl"); !errors.Is(err, api.ErrNotFound) {
			t.Fatalf("delete requested while the create was in flight: the volume is still there: %+v (%v)", v, err)
		}
		for _, x := range a.externals(plug) {
			if x.VolumeID == "" {
				t.Fatalf("delete requested while the create was in flight: the plugin keeps an unregistered volume %s", x.ExternalID)
			}
		}
	})
}

// TestVolumeConcurrency creates 50 volumes at once, snapshots and expands
// some of them while their work runs, then deletes them all: calls for one
// volume never overlap at the plugin, calls for different volumes do.
func TestVolumeConcurrency(t *testing.T) {
	for _, drv := range []string{"go_plugin", "raw_exec"} {
		t.Run(drv, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, csiConfig)
			a := e.start()
			plug := "cc-" + strings.ReplaceAll(drv, "_", "-")
			p := startVolPlugin(t, e, a, drv, plug, map[string]string{
				"MOCKCSI_LATENCY": "20ms", "MOCKCSI_RECORD_CALLS": "1"})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()

			const n = 50
			id := func(i int) string { return fmt.Sprintf("c%02d", i) }
			expanded := func(i int) bool { return i%5 == 0 }
			var wg sync.WaitGroup
			errs := make(chan error, 4*n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := a.client.CreateVolumeSource(ctx, id(i), id(i)+".hcl", []byte(volSpec(id(i), plug, "1MiB", "1GiB"))); err != nil {
						errs <- fmt.Errorf("create %s: %w", id(i), err)
						return
					}
					if !expanded(i) {
						return
					}
					// Expand at once, most likely while the create runs.
					if _, err := a.client.CreateVolumeSource(ctx, id(i), id(i)+".hcl", []byte(volSpec(id(i), plug, "2MiB", "1GiB"))); err != nil {
						errs <- fmt.Errorf("expand %s: %w", id(i), err)
						return
					}
					// A snapshot needs the volume at the plugin; then it
					// races a second expand for the volume's slot.
					var v *api.CSIVolume
					if err := a.waitFor(ctx, "volume "+id(i)+" created", func(ctx context.Context) (bool, error) {
						var err error
						v, err = a.client.Volume(ctx, id(i))
						return err == nil && (v.ExternalID != "" || v.State == api.VolumeStateFailed), err
					}, api.TopicVolume); err != nil {
						errs <- err
						return
					}
					if v.State == api.VolumeStateFailed {
						errs <- fmt.Errorf("volume %s failed: %s", id(i), v.LastError)
						return
					}
					var inner sync.WaitGroup
					inner.Add(2)
					go func() {
						defer inner.Done()
						if _, err := a.client.CreateSnapshot(ctx, id(i), "snap-"+id(i)); err != nil {
							errs <- fmt.Errorf("snapshot %s: %w", id(i), err)
						}
					}()
					go func() {
						defer inner.Done()
						if _, err := a.client.CreateVolumeSource(ctx, id(i), id(i)+".hcl", []byte(volSpec(id(i), plug, "3MiB", "1GiB"))); err != nil {
							errs <- fmt.Errorf("expand %s again: %w", id(i), err)
						}
					}()
					inner.Wait()
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}

			// Every request has been answered, so each has recorded its
			// pending work: "all ready" means all done.
			a.mustWait("50 volumes ready", 60*time.Second, func(ctx context.Context) (bool, error) {
				vols, err := a.client.Volumes(ctx, plug)
				if err != nil || len(vols) != n {
					return false, err
				}
				for _, v := range vols {
					if v.State != api.VolumeStateReady {
						return v.State == api.VolumeStateFailed, nil
					}
				}
				return true, nil
			}, api.TopicVolume)
			for i := range n {
				v, err := a.client.Volume(ctx, id(i))
				if err != nil {
					t.Fatal(err)
				}
				want := mib
				if expanded(i) {
					want = 3 * mib
				}
				if v.State != api.VolumeStateReady || v.RequestedCapacityMin != want || v.Capacity < want {
					t.Fatalf("volume %s: state %q (%s, %s), requested min %d, capacity %d; want ready with %d",
						v.ID, v.State, v.StateDescription, v.LastError, v.RequestedCapacityMin, v.Capacity, want)
				}
			}

			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := a.client.DeleteVolume(ctx, id(i)); err != nil {
						t.Errorf("delete %s: %v", id(i), err)
					}
				}()
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			a.mustWait("every volume gone", 60*time.Second, func(ctx context.Context) (bool, error) {
				vols, err := a.client.Volumes(ctx, plug)
				return err == nil && len(vols) == 0, err
			}, api.TopicVolume)
			if ext := a.externals(plug); len(ext) != 0 {
				t.Fatalf("after deleting every volume the plugin still lists %s", externalIDs(ext))
			}
			c := p.calls(t, nil)
			t.Logf("calls.json: %+v", c)
			if c.Overlaps != 0 || c.MaxParallel < 2 {
				t.Fatalf("calls.json: %d overlapping calls (%v), at most %d calls in parallel; want 0 overlaps and parallel calls",
					c.Overlaps, c.OverlapsByVolume, c.MaxParallel)
			}
			if c.Calls["CreateVolume"] < n || c.Calls["DeleteVolume"] < n || c.Calls["CreateSnapshot"] != n/5 || c.Calls["ControllerExpandVolume"] < n/5 {
				t.Fatalf("calls.json counts %v; want >= %d creates and deletes, %d snapshots, >= %d expansions", c.Calls, n, n/5, n/5)
			}
		})
	}
}

// rawAPI sends body to the agent's API as it is, and returns the status
// and the decoded error answer.
func rawAPI(t *testing.T, e *env, method, path, body string) (int, api.ErrorResponse) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", e.sock)
	}}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequest(method, "http://pluginhost"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		// The API takes bodies as JSON only (a web page cannot send
		// that without a preflight).
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var er api.ErrorResponse
	_ = json.Unmarshal(b, &er)
	return resp.StatusCode, er
}

// TestVolumeBadRequests: bad volume files fail with file:line:col in the
// CLI and through the API; malformed JSON bodies get a 400 naming the
// field; none of it leaves anything in the state.
func TestVolumeBadRequests(t *testing.T) {
	e := newEnv(t, csiConfig)
	a := e.start()
	startVolPlugin(t, e, a, "go_plugin", "bad", nil)

	t.Run("files", func(t *testing.T) {
		for _, c := range []struct {
			name, src, want string
		}{
			{"unknown-key.hcl", volSpec("b1", "bad", "1MiB", "1GiB") + "bogus = 1\n", "unknown-key.hcl:11:1"},
			{"bad-capacity.hcl", volSpec("b1", "bad", "lots", "1GiB"), "bad-capacity.hcl:5:"},
		} {
			file := filepath.Join(e.root, c.name)
			writeFile(t, file, c.src)
			for _, cmd := range []string{"create", "register"} {
				r := e.cli("volume", cmd, file)
				if r.code == 0 || !strings.Contains(r.stderr, c.want) {
					t.Errorf("volume %s %s: exit %d, want non-zero with %s on stderr:\n%s%s", cmd, c.name, r.code, c.want, r.stdout, r.stderr)
				}
			}
			// The agent checks the file too, for clients that do not.
			body, _ := json.Marshal(api.CSIVolumeRegisterRequest{Source: c.src, Filename: c.name})
			code, er := rawAPI(t, e, http.MethodPut, "/v1/volume/csi/b1/create", string(body))
			diag, _ := json.Marshal(er.Diagnostics)
			if code != http.StatusBadRequest || er.Field != "Source" || !strings.Contains(er.Error+string(diag), c.want) {
				t.Errorf("PUT create with %s: %d %+v; want 400 on Source with %s", c.name, code, er, c.want)
			}
		}
	})

	t.Run("bodies", func(t *testing.T) {
		capOK := `"RequestedCapabilities":[{"AccessMode":"single-node-writer","AttachmentMode":"file-system"}]`
		for _, c := range []struct {
			what, method, path, body string
			field, mention           string
		}{
			{"no plugin_id", http.MethodPost, "/v1/volume/csi/b1/create",
				`{"Volumes":[{"ID":"b1",` + capOK + `}]}`, "Volumes[0]", "plugin_id"},
			{"bad access mode", http.MethodPut, "/v1/volume/csi/b1/create",
				`{"Volumes":[{"ID":"b1","PluginID":"bad","RequestedCapabilities":[{"AccessMode":"sometimes","AttachmentMode":"file-system"}]}]}`,
				"Volumes[0]", "access_mode"},
			{"ID not the path's", http.MethodPut, "/v1/volume/csi/b1/create",
				`{"Volumes":[{"ID":"b2","PluginID":"bad",` + capOK + `}]}`, "Volumes[0].ID", "b2"},
			{"file naming another ID", http.MethodPut, "/v1/volume/csi/b1/create",
				mustMarshal(t, api.CSIVolumeRegisterRequest{Source: volSpec("b2", "bad", "1MiB", "1GiB")}), "ID", "b2"},
			{"Source and Volumes", http.MethodPut, "/v1/volume/csi/b1/create",
				mustMarshal(t, api.CSIVolumeRegisterRequest{Source: volSpec("b1", "bad", "1MiB", "1GiB"),
					Volumes: []*api.CSIVolume{{ID: "b1", PluginID: "bad"}}}), "Volumes", "not both"},
			{"unknown field", http.MethodPut, "/v1/volume/csi/b1/create",
				`{"Volumes":[{"ID":"b1","PluginID":"bad","Bogus":1,` + capOK + `}]}`, "Bogus", "unknown field"},
			{"register without external ID", http.MethodPut, "/v1/volume/csi/b1",
				`{"Volumes":[{"ID":"b1","PluginID":"bad",` + capOK + `}]}`, "Volumes[0]", "external_id"},
			{"register, bad capacity type", http.MethodPost, "/v1/volume/csi/b1",
				`{"Volumes":[{"ID":"b1","PluginID":"bad","ExternalID":"x","RequestedCapacityMin":"1GiB",` + capOK + `}]}`,
				"Volumes.RequestedCapacityMin", "int64"},
			{"empty body", http.MethodPut, "/v1/volume/csi/b1/create", `{}`, "Source", "empty"},
		} {
			code, er := rawAPI(t, e, c.method, c.path, c.body)
			if code != http.StatusBadRequest || er.Field != c.field || !strings.Contains(er.Error, c.mention) {
				t.Errorf("%s: %s %s: %d field %q error %q; want 400 on %s mentioning %q",
					c.what, c.method, c.path, code, er.Field, er.Error, c.field, c.mention)
			}
		}
	})

	var list []*api.CSIVolumeListStub
	mustJSON(t, e.cli("volume", "status", "-json"), &list)
	if len(list) != 0 {
		t.Fatalf("bad requests left volumes behind: %+v", list)
	}
	if ext := a.externals("bad"); len(ext) != 0 {
		t.Fatalf("bad requests reached the plugin: it lists %s", externalIDs(ext))
	}
	// volume create on a plugin without CREATE_DELETE_VOLUME is not
	// tested here: mockcsi always advertises it (no flag turns it off),
	// and a node-only csi_plugin of mockcsi still reports the controller
	// service, so the agent waits for a controller rather than refusing.
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSpace(b))
}
