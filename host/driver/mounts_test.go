package driver

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/host/nsexec"
	"github.com/pluginhost/pluginhost/internal/beneath"
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

// A mount the helper cannot make fails the launch before the task's
// binary runs, with the helper's reason as the launch's error (and in the
// task's output).
func TestRawExecMountFailure(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mount namespaces need root")
	}
	dir := t.TempDir()
	out, err := startRefused(t, NewRawExec(newWatcher(t)), &StartRequest{
		Command: "/bin/sh", Args: []string{"-c", "echo RAN"}, Env: []string{"PATH=/usr/bin:/bin"}, WorkDir: dir,
		Mounts: []nsexec.Mount{{Source: filepath.Join(dir, "missing"), Target: filepath.Join(dir, "t")}}, MountHelper: []string{testNsexec},
	})
	if !strings.Contains(err.Error(), "bind") || strings.Contains(out, "RAN") || !strings.Contains(out, "bind") {
		t.Fatalf("launch error %v, output %q: want the failed bind named, task not run", err, out)
	}
}

// startRefused runs req with d, expecting the namespace helper to refuse
// to set the task up: the launch itself succeeds (the helper's work is not
// on its path), and the task ends at once with the helper's reason as its
// SetupErr. It returns what the task (the helper) wrote and that reason.
func startRefused(t *testing.T, d Driver, req *StartRequest) (out string, err error) {
	t.Helper()
	res, out := runTask(t, d, req)
	if res.SetupErr == nil || res.ExitCode != 126 || res.Successful() {
		t.Fatalf("the helper did not refuse the task: %+v, output %q", res, out)
	}
	return out, res.SetupErr
}

// runWithMounts runs script under /bin/sh through the mount helper with
// mounts, waits for it and returns its result and output.
func runWithMounts(t *testing.T, dir, script string, mounts []nsexec.Mount) (*ExitResult, string) {
	t.Helper()
	return runTask(t, NewRawExec(newWatcher(t)), &StartRequest{
		Command: "/bin/sh", Args: []string{"-c", script}, Env: []string{"PATH=/usr/bin:/bin"},
		WorkDir: dir, Mounts: mounts, MountHelper: []string{testNsexec},
	})
}

// runTask starts req with d, its output on a pipe, waits for it to end
// (killing it at cleanup if the test fails first) and returns its result
// and output.
func runTask(t *testing.T, d Driver, req *StartRequest) (*ExitResult, string) {
	t.Helper()
	r, w := pipeFile(t)
	req.Stdout, req.Stderr = w, w
	task, err := d.Start(context.Background(), req)
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

// A task user who plants a symlink at a volume's mount point in its own task
// directory (local/data -> a host directory) gets a refused launch on its
// next start, not a bind made by root over the host directory: under
// raw_exec (a target in the task dir) and under exec (a target in the root).
func TestMountTargetSymlinkRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mount namespaces need root")
	}
	for _, drv := range []string{"raw_exec", "exec"} {
		t.Run(drv, func(t *testing.T) {
			dir := t.TempDir()
			taskDir, outside, vol := filepath.Join(dir, "task"), filepath.Join(dir, "host-etc"), filepath.Join(dir, "vol")
			for _, d := range []string{filepath.Join(taskDir, "local"), filepath.Join(taskDir, "secrets"), outside, vol} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(outside, filepath.Join(taskDir, "local", "data")); err != nil {
				t.Fatal(err)
			}
			req := &StartRequest{
				Command: "/bin/sh", Args: []string{"-c", "echo RAN"}, Env: []string{"PATH=/usr/bin:/bin"},
				TaskDir: taskDir, SharedDir: dir, MountHelper: []string{testNsexec},
			}
			var d Driver = NewRawExec(newWatcher(t))
			req.Mounts = []nsexec.Mount{{Source: vol, Target: filepath.Join(taskDir, "local", "data", "sub")}}
			req.WorkDir = taskDir
			if drv == "exec" {
				d = NewExec(newWatcher(t), testExecOptions)
				req.Mounts = []nsexec.Mount{{Source: vol, Target: "/local/data/sub"}}
				req.User, req.Exec, req.WorkDir = nobody, execConfig(t, ""), ""
			}
			out, err := startRefused(t, d, req)
			if !errors.Is(err, beneath.ErrUnsafe) || strings.Contains(out, "RAN") || !strings.Contains(err.Error(), "local/data is a symbolic link") {
				t.Fatalf("launch error %v, output %q: want the launch refused, naming the planted link", err, out)
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Fatalf("the helper made %v in the host directory the symlink pointed at", ents)
			}
		})
	}
}
