package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/host/api"
)

// Volume claim tests: jobs whose groups claim CSI volumes, with mockcsi
// (under both drivers) doing real bind mounts, and tasks reading and
// writing through their volume_mount destinations.

// volumeBlock is a group `volume` block.
func volumeBlock(alias, source, access string, readOnly bool) string {
	return fmt.Sprintf(`    volume %q {
      type            = "csi"
      source          = %q
      access_mode     = %q
      attachment_mode = "file-system"
      read_only       = %t
    }
`, alias, source, access, readOnly)
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
			if m := mountsUnder(t, e.dataDir); len(m) != 0 {
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
			if m := mountsUnder(t, e.root); len(m) != 0 {
				t.Fatalf("mounts left at the end: %v", m)
			}
		})
	}
}
