package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// Volume claim tests: jobs whose groups claim CSI volumes, with mockcsi
// (under both drivers) doing real bind mounts, and tasks reading and
// writing through their volume_mount destinations.

// volumeBlock is a group `volume` block.
func volumeBlock(alias, source, access string, readOnly bool) string {
	return volumeBlockOf(alias, source, access, readOnly, false)
}

// perAllocVolumeBlock is volumeBlock with per_alloc = true: each
// allocation claims source[index].
func perAllocVolumeBlock(alias, source, access string, readOnly bool) string {
	return volumeBlockOf(alias, source, access, readOnly, true)
}

func volumeBlockOf(alias, source, access string, readOnly, perAlloc bool) string {
	return fmt.Sprintf(`    volume %q {
      type            = "csi"
      source          = %q
      access_mode     = %q
      attachment_mode = "file-system"
      read_only       = %t
      per_alloc       = %t
    }
`, alias, source, access, readOnly, perAlloc)
}

// volumeMount is a task `volume_mount` block.
func volumeMount(alias, dest string, readOnly bool) string {
	return fmt.Sprintf("      volume_mount {\n        volume = %q\n        destination = %q\n        read_only = %t\n      }\n", alias, dest, readOnly)
}

// claimTask is a raw_exec shell task with volume mounts; it runs script,
// then sleeps until stopped.
func claimTask(name, marker, script string, mounts ...string) taskSpec {
	tk := shTask(name, marker, script+" && exec sleep 1000")
	tk.extra = strings.Join(mounts, "")
	return tk
}

// createVolume creates a single-node-writer or other-mode volume through
// the CLI and waits until it is ready.
func createVolume(t *testing.T, e *env, id, plugin, access string) {
	t.Helper()
	file := filepath.Join(e.root, id+".hcl")
	spec := strings.Replace(volSpec(id, plugin, "1MiB", "1GiB"), `"single-node-writer"`, fmt.Sprintf("%q", access), 1)
	writeFile(t, file, spec)
	e.mustCLI(t, []string{fmt.Sprintf("Volume %q is ready", id)}, "volume", "create", file)
}

// allocFile reads a file a task wrote under its allocation's shared dir,
// waiting for it to appear.
func (e *env) allocFile(t *testing.T, a *agentProc, alloc, name string) string {
	t.Helper()
	p := filepath.Join(e.dataDir, "alloc", alloc, "alloc", name)
	var b []byte
	a.mustWait("file "+name+" of allocation "+short(alloc), 30*time.Second, func(context.Context) (bool, error) {
		var err error
		b, err = os.ReadFile(p)
		return err == nil && len(b) > 0 && b[len(b)-1] == '\n', nil
	}, api.TopicAllocation)
	return string(b)
}

// claimsOf returns the volume's claims.
func (a *agentProc) claimsOf(t *testing.T, id string) []*api.CSIVolumeClaim {
	t.Helper()
	v, err := a.client.Volume(context.Background(), id)
	if err != nil {
		t.Fatalf("volume %s: %v", id, err)
	}
	return v.Claims
}

// noClaims waits until the volume has no claim left.
func noClaims(v *api.CSIVolume, err error) bool { return err == nil && len(v.Claims) == 0 }

// TestVolumeClaimLifecycle: job run → the task writes through its
// destination (and cannot write through a read-only mount of the same
// volume) → job stop → claims released, no mount left → job run again →
// the file is there → volume delete.
func TestVolumeClaimLifecycle(t *testing.T) {
	for _, drv := range []string{"go_plugin", "raw_exec"} {
		t.Run(drv, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, csiConfig)
			a := e.start()
			plug := "cl-" + strings.ReplaceAll(drv, "_", "-")
			p := startVolPlugin(t, e, a, drv, plug, map[string]string{"MOCKCSI_RECORD_CALLS": "1"})
			createVolume(t, e, "data", plug, "single-node-writer")

			dest := filepath.Join(e.root, "mnt", "data")
			script := fmt.Sprintf(`echo hello > %[1]s/f && cp %[1]s/f "$NOMAD_ALLOC_DIR/wrote" && `+
				`if (echo x > ro/g) 2>/dev/null; then echo writable > "$NOMAD_ALLOC_DIR/ro"; else echo refused > "$NOMAD_ALLOC_DIR/ro"; fi`, dest)
			job := jobHCL("app", volumeBlock("data", "data", "single-node-writer", false),
				claimTask("t", e.markerFor("app"), script, volumeMount("data", dest, false), volumeMount("data", "ro", true)))
			alloc := a.runJob("app", job)[0]
			a.waitAlloc(alloc, "running", running("t"))
			if got := e.allocFile(t, a, alloc, "wrote"); got != "hello\n" {
				t.Fatalf("the task read back %q through %s", got, dest)
			}
			if got := e.allocFile(t, a, alloc, "ro"); got != "refused\n" {
				t.Fatalf("a write through the read-only mount: %q, want refused", got)
			}
			claims := a.claimsOf(t, "data")
			if len(claims) != 1 || claims[0].AllocID != alloc || claims[0].State != "published" || claims[0].Mode != "write" {
				t.Fatalf("claims while running: %+v; want one published write claim of %s", claims, alloc)
			}
			if b, err := os.ReadFile(filepath.Join(claims[0].TargetPath, "f")); err != nil || string(b) != "hello\n" {
				t.Fatalf("the published path %s does not hold the task's file: %q, %v", claims[0].TargetPath, b, err)
			}
			if m := mountsUnder(t, dest); len(m) != 0 {
				t.Fatalf("the task's bind at %s is visible outside its namespace: %v", dest, m)
			}

			a.stopJob("app")
			a.waitVolume("data", "claims released", noClaims)
			if m := e.volumeMounts(t); len(m) != 0 {
				t.Fatalf("mounts left after the job stopped: %v", m)
			}
			calls := p.calls(t, func(c *mockCalls) bool { return c.Calls["NodeUnstageVolume"] >= 1 })
			for _, rpc := range []string{"NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume"} {
				if calls.Calls[rpc] != 1 {
					t.Errorf("%s called %d times, want once: %v", rpc, calls.Calls[rpc], calls.Calls)
				}
			}

			// Again: the file is still there.
			reader := fmt.Sprintf(`cat %s/f > "$NOMAD_ALLOC_DIR/seen"`, dest)
			alloc2 := a.runJob("app", jobHCL("app", volumeBlock("data", "data", "single-node-writer", true),
				claimTask("t", e.markerFor("app"), reader, volumeMount("data", dest, false))))[0]
			if got := e.allocFile(t, a, alloc2, "seen"); got != "hello\n" {
				t.Fatalf("the second run read %q, want the first run's file", got)
			}
			if c := a.claimsOf(t, "data"); len(c) != 1 || c[0].Mode != "read" {
				t.Fatalf("claims of the read-only run: %+v", c)
			}
			a.stopJob("app")
			a.waitVolume("data", "claims released", noClaims)
			e.mustCLI(t, []string{`Volume "data" is gone`}, "volume", "delete", "data")
			if m := e.volumeMounts(t); len(m) != 0 {
				t.Fatalf("mounts left at the end: %v", m)
			}
		})
	}
}

// TestVolumeClaimRefusals: claims that cannot be granted fail `job run`
// with the volume and the reason (nothing recorded); a claim whose plugin
// never becomes healthy fails its allocation after volume_mount_timeout
// with an event naming the plugin, and leaves no claim and no mount.
func TestVolumeClaimRefusals(t *testing.T) {
	e := newEnv(t, "csi {\n  fingerprint_interval = \"1s\"\n  probe_timeout = \"2s\"\n  volume_mount_timeout = \"2s\"\n}\n")
	a := e.start()
	startVolPlugin(t, e, a, "go_plugin", "rf", nil)
	createVolume(t, e, "one", "rf", "single-node-writer")
	createVolume(t, e, "ro", "rf", "multi-node-reader-only")

	// A controller-only plugin: nothing here can mount its volumes.
	w := a.watchPlugins()
	ctl := csiTask(t, "go_plugin", "plugin", e.markerFor("ctl"), "ctl", "30s")
	ctl.extra = strings.Replace(ctl.extra, `"monolith"`, `"controller"`, 1)
	ctlAlloc := a.runJob("ctl", jobHCL("ctl", restartPolicy, ctl))[0]
	w.until("controller ctl healthy", func() bool { return w.healthy[ctlAlloc+"/csi-controller"] })
	createVolume(t, e, "cv", "ctl", "single-node-writer")

	dest := filepath.Join(e.root, "mnt")
	jobWith := func(id, vol string) string {
		return jobHCL(id, vol, claimTask("t", e.markerFor(id), "true", volumeMount("data", dest, false)))
	}
	holder := a.runJob("w1", jobWith("w1", volumeBlock("data", "one", "single-node-writer", false)))[0]
	a.waitAlloc(holder, "running", running("t"))

	ctx := context.Background()
	blockVol := strings.Replace(volumeBlock("data", "one", "single-node-writer", false), `"file-system"`, `"block-device"`, 1)
	for _, tc := range []struct {
		name, job string
		wants     []string
	}{
		{"second writer", jobWith("w2", volumeBlock("data", "one", "single-node-writer", false)),
			[]string{`volume "one"`, "one writer", holder, `job "w1"`}},
		{"missing volume", jobWith("w3", volumeBlock("data", "nope", "single-node-writer", false)),
			[]string{`volume "nope"`, "no such volume"}},
		{"mode not offered", jobWith("w4", blockVol),
			[]string{`volume "one"`, "no capability single-node-writer/block-device"}},
		{"write on reader-only", jobWith("w5", volumeBlock("data", "ro", "multi-node-reader-only", false)),
			[]string{`volume "ro"`, "only read claims", "read_only = true"}},
		{"no node plugin", jobWith("w6", volumeBlock("data", "cv", "single-node-writer", false)),
			[]string{`volume "cv"`, `plugin "ctl" has no node service`}},
	} {
		_, err := a.client.RegisterJobSource(ctx, tc.name+".hcl", []byte(tc.job))
		if err == nil {
			t.Errorf("%s: job run accepted", tc.name)
			continue
		}
		for _, want := range tc.wants {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not say %q", tc.name, err, want)
			}
		}
	}
	if jobs, err := a.client.Jobs(ctx); err != nil || len(jobs) != 3 {
		t.Fatalf("jobs after the refusals: %d (%v); want rf, ctl and w1 only", len(jobs), err)
	}

	// A plugin that never comes: the allocation waits, then fails.
	reg := filepath.Join(e.root, "gv.hcl")
	writeFile(t, reg, volSpec("gv", "ghost", "1MiB", "1GiB")+"external_id = \"ext-gv\"\n")
	e.mustCLI(t, []string{`Volume "gv" recorded`}, "volume", "register", "-detach", reg)
	ghost := a.runJob("g", jobWith("g", volumeBlock("data", "gv", "single-node-writer", false)))[0]
	al := a.waitAlloc(ghost, "failed", func(al *api.Allocation) bool { return al.ClientStatus == "failed" })
	found := false
	for _, ev := range events(al, "t", api.TaskSetupFailure) {
		found = found || strings.Contains(ev.DisplayMessage, `waiting for plugin "ghost"`)
	}
	if !found {
		t.Fatalf("no Setup Failure event names the missing plugin: %s", allocSummary(al))
	}
	a.waitVolume("gv", "the failed allocation's claim released", noClaims)
	for _, m := range e.volumeMounts(t) {
		if !strings.Contains(m, "/one/") {
			t.Fatalf("a mount other than w1's: %s", m)
		}
	}
}

// TestVolumeClaimUpdateAndPerAlloc: a job update whose new version needs
// the volume the old one writes (single-node-writer) stops the old
// allocation first and mounts the volume for the new one; per_alloc gives
// each allocation of a group its own volume, source[index].
func TestVolumeClaimUpdateAndPerAlloc(t *testing.T) {
	e := newEnv(t, csiConfig)
	a := e.start()
	startVolPlugin(t, e, a, "go_plugin", "up", nil)
	createVolume(t, e, "uv", "up", "single-node-writer")
	for _, id := range []string{"pa[0]", "pa[1]"} {
		createVolume(t, e, id, "up", "single-node-writer")
	}

	dest := filepath.Join(e.root, "mnt")
	version := func(v string) string {
		tk := claimTask("t", e.markerFor("uj"), fmt.Sprintf(`echo %s >> %s/versions && echo done > "$NOMAD_ALLOC_DIR/done"`, v, dest), volumeMount("data", dest, false))
		tk.env = map[string]string{"VERSION": v}
		return jobHCL("uj", volumeBlock("data", "uv", "single-node-writer", false), tk)
	}
	old := a.runJob("uj", version("1"))[0]
	e.allocFile(t, a, old, "done")
	next := a.runJob("uj", version("2"))[0]
	e.allocFile(t, a, next, "done")
	a.waitAlloc(old, "stopped", taskDead("t"))
	claims := a.claimsOf(t, "uv")
	if len(claims) != 1 || claims[0].AllocID != next {
		t.Fatalf("claims after the update: %+v; want only %s", claims, next)
	}
	if b, err := os.ReadFile(filepath.Join(claims[0].TargetPath, "versions")); err != nil || string(b) != "1\n2\n" {
		t.Fatalf("the volume's log of versions: %q, %v; want both, in order", b, err)
	}

	group := perAllocVolumeBlock("data", "pa", "single-node-writer", false) + "    count = 2\n"
	allocs := a.runJob("pj", jobHCL("pj", group,
		claimTask("t", e.markerFor("pj"), fmt.Sprintf(`echo "$NOMAD_ALLOC_INDEX" > %s/index && echo done > "$NOMAD_ALLOC_DIR/done"`, dest), volumeMount("data", dest, false))))
	if len(allocs) != 2 {
		t.Fatalf("allocations: %v", allocs)
	}
	for _, al := range allocs {
		e.allocFile(t, a, al, "done")
	}
	for i, id := range []string{"pa[0]", "pa[1]"} {
		c := a.claimsOf(t, id)
		if len(c) != 1 {
			t.Fatalf("volume %s claims: %+v", id, c)
		}
		b, err := os.ReadFile(filepath.Join(c[0].TargetPath, "index"))
		if err != nil || string(b) != fmt.Sprintf("%d\n", i) {
			t.Fatalf("volume %s holds index %q (%v); want allocation %d's", id, b, err, i)
		}
	}
}

// TestVolumeDetachAndForce: a volume in use cannot be deleted or
// deregistered, even with -force, and detach leaves a running allocation's
// claim alone; the CLI shows the claim in volume status and alloc status.
// A claim released while its plugin is gone waits for the plugin (it is
// not dropped with a mount left behind), and deregister -force of that
// volume finishes once the plugin is back: unpublished, unstaged, gone.
func TestVolumeDetachAndForce(t *testing.T) {
	e := newEnv(t, csiConfig)
	a := e.start()
	p := startVolPlugin(t, e, a, "go_plugin", "df", nil)
	createVolume(t, e, "dv", "df", "single-node-writer")
	dest := filepath.Join(e.root, "mnt")
	alloc := a.runJob("app", jobHCL("app", volumeBlock("data", "dv", "single-node-writer", false),
		claimTask("t", e.markerFor("app"), "true", volumeMount("data", dest, false))))[0]
	a.waitAlloc(alloc, "running", running("t"))

	e.mustCLI(t, []string{"Writers", "1", short(alloc), "app", "write", "mounted", "published"}, "volume", "status", "dv")
	e.mustCLI(t, []string{"CSI Volumes", "dv", "df", "mounted/published"}, "alloc", "status", alloc)
	for _, args := range [][]string{{"volume", "delete", "dv"}, {"volume", "deregister", "dv"}, {"volume", "deregister", "-force", "dv"}} {
		r := e.cli(args...)
		if r.code == 0 || !strings.Contains(r.stderr+r.stdout, "in use by allocation "+alloc) {
			t.Fatalf("%v on a volume in use: exit %d, %s%s", args, r.code, r.stdout, r.stderr)
		}
	}
	e.mustCLI(t, []string{"0 claim(s) released, 1 held by running allocations"}, "volume", "detach", "dv")

	// The plugin goes, then the job: the release waits for the plugin.
	a.stopJob("df")
	a.stopJob("app")
	a.waitVolume("dv", "release waiting for the plugin", func(v *api.CSIVolume, err error) bool {
		return err == nil && len(v.Claims) == 1 && v.Claims[0].Desired == "released" &&
			strings.Contains(v.Claims[0].StateDescription, "waiting for")
	})
	if m := e.volumeMounts(t); len(m) == 0 {
		t.Fatal("the volume was unmounted without its plugin?")
	}
	e.mustCLI(t, []string{`Volume "dv": deregistered recorded`}, "volume", "deregister", "-force", "-detach", "dv")

	// The plugin comes back (same ID and state): the release and the
	// deregistration finish.
	startVolPlugin(t, e, a, "go_plugin", "df", nil)
	a.waitVolume("dv", "gone", volGone)
	if m := e.volumeMounts(t); len(m) != 0 {
		t.Fatalf("mounts left: %v", m)
	}
	p.waitMock(t, "dv", "nothing published", mockClean)
}
