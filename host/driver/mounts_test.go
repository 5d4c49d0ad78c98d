package driver

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/host/nsexec"
	"github.com/pluginhost/pluginhost/internal/mountinfo"
)

// A task with mounts sees the rw volume writable and the ro one read-only
// at their targets, in a namespace of its own: the host sees neither bind.
func TestRawExecMounts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("bind mounts need root")
	}
	dir := t.TempDir()
	rw, ro := filepath.Join(dir, "rw-src"), filepath.Join(dir, "ro-src")
	for _, d := range []string{rw, ro} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ro, "hello"), []byte("from ro\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A block-device attachment is published as a file (a device node;
	// a regular file stands in for it here) and bound onto a file.
	dev := filepath.Join(dir, "dev-src")
	if err := os.WriteFile(dev, []byte("block\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dstRW, dstRO := filepath.Join(dir, "task", "data"), filepath.Join(dir, "task", "conf")
	dstDev := filepath.Join(dir, "task", "dev", "xvda")
	script := `echo written > ` + dstRW + `/f && cat ` + dstRO + `/hello && ` +
		`if (echo x > ` + dstRO + `/g) 2>/dev/null; then echo RO-WRITABLE; else echo ro-refused; fi && ` +
		`grep -c " ` + dstRW + ` " /proc/self/mountinfo && cat ` + dstDev
	res, out := runWithMounts(t, dir, script, []nsexec.Mount{
		{Source: rw, Target: dstRW},
		{Source: ro, Target: dstRO, ReadOnly: true},
		{Source: dev, Target: dstDev, File: true},
	})
	if res.ExitCode != 0 {
		t.Fatalf("task exited %+v; output:\n%s", res, out)
	}
	if want := "from ro\nro-refused\n1\nblock\n"; out != want {
		t.Fatalf("task output %q, want %q", out, want)
	}
	if b, err := os.ReadFile(filepath.Join(rw, "f")); err != nil || string(b) != "written\n" {
		t.Fatalf("the write through the rw target did not reach the source: %q, %v", b, err)
	}
	if leaked, err := mountinfo.IsMountPoint(dstRW); err != nil || leaked {
		t.Fatalf("the task's bind of %s leaked into the host's mount namespace (%v)", dstRW, err)
	}
}

// A mount the helper cannot make fails the task before its binary runs,
// with the reason in its output.
func TestRawExecMountFailure(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mount namespaces need root")
	}
	dir := t.TempDir()
	res, out := runWithMounts(t, dir, "echo RAN",
		[]nsexec.Mount{{Source: filepath.Join(dir, "missing"), Target: filepath.Join(dir, "t")}})
	if res.ExitCode != 126 || strings.Contains(out, "RAN") || !strings.Contains(out, "bind") {
		t.Fatalf("exit %+v, output %q: want 126 and the failed bind named, task not run", res, out)
	}
}

// runWithMounts runs script under /bin/sh through the mount helper with
// mounts, waits for it and returns its result and output.
func runWithMounts(t *testing.T, dir, script string, mounts []nsexec.Mount) (*ExitResult, string) {
	t.Helper()
	r, w := pipeFile(t)
	task, err := NewRawExec(newWatcher(t)).Start(context.Background(), &StartRequest{
		Command: "/bin/sh", Args: []string{"-c", script}, Env: []string{"PATH=/usr/bin:/bin"},
		Stdout: w, Stderr: w, WorkDir: dir, Mounts: mounts, MountHelper: []string{testNsexec},
	})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	killOnCleanup(t, task.Handle().Pid)
	t.Cleanup(task.Detach)
	res := waitDone(t, task, 10*time.Second)
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(out)
}
