package driver

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pluginhost/pluginhost/host/nsexec"
	"github.com/pluginhost/pluginhost/internal/beneath"
)

// reachableTempDir is a t.TempDir every user may pass (the testing
// package makes its parent 0700).
func reachableTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// plantSetuidID puts a copy of id in dir, root's and setuid, as an exec
// task with Nomad's default capabilities can in a volume it writes.
func plantSetuidID(t *testing.T, dir string) string {
	t.Helper()
	src, err := exec.LookPath("id")
	if err != nil {
		t.Skip("no id binary")
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "id")
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o4755); err != nil {
		t.Fatal(err)
	}
	return p
}

// Review finding F1: a volume another task wrote may hold a setuid-root
// binary or a device node. Every driver's volume is nosuid and nodev (a
// block volume, a device the task must open, nosuid only), so a task as
// nobody that runs the planted binary stays nobody. Before, a raw_exec
// task's volume kept suid and dev, and the planted bash ran as euid 0.
func TestVolumesAreNosuidNodev(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mount namespaces need root")
	}
	for _, drv := range []string{"raw_exec", "exec"} {
		t.Run(drv, func(t *testing.T) {
			dir := reachableTempDir(t)
			vol := filepath.Join(dir, "vol")
			taskDir := filepath.Join(dir, "task")
			for _, d := range []string{vol, filepath.Join(taskDir, "local"), filepath.Join(taskDir, "secrets")} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			plantSetuidID(t, vol)
			// A read-only block volume: its mount point is a file, and the
			// bind shows a character device (F6: refused as "unsafe"
			// before, when the remount looked for a regular file).
			target, blk := filepath.Join(taskDir, "local", "data"), filepath.Join(taskDir, "local", "blk")
			script := func(target, blk string) string {
				return `for m in ` + target + ` ` + blk + `; do grep " $m " /proc/self/mountinfo | cut -d' ' -f6; done; ` + target + `/id -u; test -c ` + blk + ` && echo char`
			}
			var d Driver = NewRawExec(newWatcher(t))
			req := &StartRequest{
				Command: "/bin/sh", Args: []string{"-c", script(target, blk)}, Env: []string{"PATH=/usr/bin:/bin"},
				TaskDir: taskDir, SharedDir: dir, WorkDir: taskDir, User: nobody, MountHelper: []string{testNsexec},
				Mounts: []nsexec.Mount{{Source: vol, Target: target}, {Source: "/dev/null", Target: blk, File: true, ReadOnly: true}},
			}
			if drv == "exec" {
				d = NewExec(newWatcher(t), testExecOptions)
				req.Args = []string{"-c", script("/local/data", "/local/blk")}
				req.Mounts = []nsexec.Mount{{Source: vol, Target: "/local/data"}, {Source: "/dev/null", Target: "/local/blk", File: true, ReadOnly: true}}
				req.Exec, req.WorkDir = execConfig(t, ""), ""
			}
			res, out := runTask(t, d, req)
			if res.ExitCode != 0 {
				t.Fatalf("task exited %+v; output:\n%s", res, out)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 4 {
				t.Fatalf("task output %q", out)
			}
			for _, opt := range []string{"nosuid", "nodev"} {
				if !strings.Contains(","+lines[0]+",", ","+opt+",") {
					t.Errorf("the directory volume is mounted %s, want %s", lines[0], opt)
				}
			}
			if o := "," + lines[1] + ","; !strings.Contains(o, ",nosuid,") || !strings.Contains(o, ",ro,") || strings.Contains(o, ",nodev,") {
				t.Errorf("the read-only block volume is mounted %s, want ro,nosuid and devices", lines[1])
			}
			if lines[2] != "65534" {
				t.Errorf("the planted setuid binary ran as uid %s, want 65534 (nosuid)", lines[2])
			}
			if lines[3] != "char" {
				t.Errorf("the block volume is not the device it was bound from: %q", lines[3])
			}
		})
	}
}

// Review finding F2: a raw_exec volume whose destination is outside the
// task directory, under a directory its user can write (/tmp/x/data). The
// user swaps the mount point for a link to a host directory between two
// launches: the next launch is refused, naming the link, and nothing is
// mounted or made where it points. Before, root mounted the volume over
// the link's target (/etc) in the task's view.
func TestHostVolumeTargetLinkRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mount namespaces need root")
	}
	dir := reachableTempDir(t)
	public, hostEtc, vol := filepath.Join(dir, "public"), filepath.Join(dir, "host-etc"), filepath.Join(dir, "vol")
	for _, d := range []string{public, hostEtc, vol} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(public, 0o1777); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(hostEtc, filepath.Join(public, "data")); err != nil {
		t.Fatal(err)
	}
	out, err := startRefused(t, NewRawExec(newWatcher(t)), &StartRequest{
		Command: "/bin/sh", Args: []string{"-c", "echo RAN"}, Env: []string{"PATH=/usr/bin:/bin"},
		WorkDir: dir, User: nobody, MountHelper: []string{testNsexec},
		Mounts: []nsexec.Mount{{Source: vol, Target: filepath.Join(public, "data", "sub")}},
	})
	if !errors.Is(err, beneath.ErrUnsafe) || strings.Contains(out, "RAN") || !strings.Contains(err.Error(), public+"/data is a symbolic link") {
		t.Fatalf("launch error %v, output %q: want the launch refused, naming the planted link", err, out)
	}
	if ents, _ := os.ReadDir(hostEtc); len(ents) != 0 {
		t.Fatalf("the helper made %v in the directory the link pointed at", ents)
	}
}

// Review finding F3: a task's work_dir is entered as the task's user, after
// the helper gave up root. A work_dir that leads, through a link the
// task's user made, to a directory only root may enter fails the launch
// with permission denied. Before, Go's child entered it as root before
// the helper ran, and the task read files there by relative path.
func TestWorkDirEnteredAsTheUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mount namespaces need root")
	}
	dir := reachableTempDir(t)
	// Another allocation's 1777 /tmp, say: open itself, behind a
	// directory the user may not pass.
	closed, vol := filepath.Join(dir, "closed"), filepath.Join(dir, "vol")
	secret := filepath.Join(closed, "tmp")
	for _, d := range []string{secret, vol, filepath.Join(dir, "task")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secret, "f"), []byte("DB_PASSWORD=hunter2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wd := filepath.Join(dir, "task", "wd")
	if err := os.Symlink(secret, wd); err != nil {
		t.Fatal(err)
	}
	// A volume makes the launch go through the helper, which starts as
	// root.
	out, err := startRefused(t, NewRawExec(newWatcher(t)), &StartRequest{
		Command: "/bin/cat", Args: []string{"f"}, Env: []string{"PATH=/usr/bin:/bin"},
		TaskDir: filepath.Join(dir, "task"), WorkDir: wd, User: nobody, MountHelper: []string{testNsexec},
		Mounts: []nsexec.Mount{{Source: vol, Target: filepath.Join(dir, "task", "vol")}},
	})
	if strings.Contains(out, "hunter2") || !strings.Contains(err.Error(), "work_dir") || !errors.Is(err, os.ErrPermission) && !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("launch error %v, output %q: want work_dir refused with permission denied", err, out)
	}
}
