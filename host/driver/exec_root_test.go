package driver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pluginhost/pluginhost/internal/beneath"
)

// execTree is a task dir and a shared alloc dir, as the task dir hook
// makes them, and a host directory a task would like root to touch.
type execTree struct {
	taskDir, shared, host string
}

func newExecTree(t *testing.T) execTree {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the exec driver needs root")
	}
	alloc := t.TempDir()
	tr := execTree{taskDir: filepath.Join(alloc, "web"), shared: filepath.Join(alloc, "alloc"), host: t.TempDir()}
	for _, d := range []string{filepath.Join(tr.taskDir, "local"), filepath.Join(tr.taskDir, "secrets"), filepath.Join(tr.shared, "logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(tr.host, 0o750); err != nil {
		t.Fatal(err)
	}
	return tr
}

func (tr execTree) run(t *testing.T, script string, user *User) (*ExitResult, string) {
	t.Helper()
	return runTask(t, NewExec(newWatcher(t), testExecOptions), &StartRequest{
		Command: "/bin/sh", Args: []string{"-c", script}, Env: []string{"PATH=/usr/bin:/bin"},
		TaskDir: tr.taskDir, SharedDir: tr.shared, Exec: execConfig(t, ""), User: user,
		MountHelper: []string{testNsexec},
	})
}

// hostUnchanged fails if the host directory changed owner, mode or
// contents.
func (tr execTree) hostUnchanged(t *testing.T) {
	t.Helper()
	fi, err := os.Stat(tr.host)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); fi.Mode() != os.ModeDir|0o750 || st.Uid != 0 || st.Gid != 0 {
		t.Fatalf("the host directory is now %v %d:%d", fi.Mode(), st.Uid, st.Gid)
	}
	if ents, _ := os.ReadDir(tr.host); len(ents) != 0 {
		t.Fatalf("the helper made %v in the host directory", ents)
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mi), tr.host) {
		t.Fatal("something is mounted on the host directory")
	}
}

// A task that left links to a host directory where its next launch's root
// is built (its /tmp, /dev, /proc, /secrets, /alloc mount points, a
// chroot_env target, or the shared log directory) gets a refused launch
// naming the link; the host directory is not chmodded, chowned, filled or
// mounted over. On main the helper's chmod made such a /tmp 0777.
func TestExecRootRefusesPlantedLinks(t *testing.T) {
	for _, entry := range []string{"tmp", "dev", "proc", "secrets", "alloc", "usr", "etc", "alloc/logs"} {
		t.Run(strings.ReplaceAll(entry, "/", "-"), func(t *testing.T) {
			tr := newExecTree(t)
			at := filepath.Join(tr.taskDir, entry)
			if entry == "alloc/logs" {
				at = filepath.Join(tr.shared, "logs")
			}
			if err := os.RemoveAll(at); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(tr.host, at); err != nil {
				t.Fatal(err)
			}
			out, err := startRefused(t, NewExec(newWatcher(t), testExecOptions), &StartRequest{
				Command: "/bin/sh", Args: []string{"-c", "echo RAN"}, Env: []string{"PATH=/usr/bin:/bin"},
				TaskDir: tr.taskDir, SharedDir: tr.shared, Exec: execConfig(t, ""), User: nobody,
				MountHelper: []string{testNsexec},
			})
			if !errors.Is(err, beneath.ErrUnsafe) || strings.Contains(out, "RAN") || !strings.Contains(err.Error(), at+" is a symbolic link") {
				t.Fatalf("launch error %v, output %q: want a refusal naming %s", err, out, at)
			}
			tr.hostUnchanged(t)
		})
	}
}

// The modes the task sees: a sticky 1777 /tmp (os.Chmod(p, 0o1777) made
// it 0777 on main), /secrets its user's, /alloc/logs read-only even to a
// task holding CAP_DAC_OVERRIDE, and /alloc writable.
func TestExecRootModes(t *testing.T) {
	tr := newExecTree(t)
	if err := os.WriteFile(filepath.Join(tr.shared, "logs", "web.stdout.0"), []byte("log\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	script := `stat -c '%a %u' /tmp /secrets; ` +
		`echo x >> /alloc/logs/web.stdout.0 && echo LOG-WRITABLE; ln -s /etc/passwd /alloc/logs/x && echo LOG-LINKABLE; ` +
		`cat /alloc/logs/web.stdout.0; echo y > /alloc/f && echo alloc-ok`
	res, out := tr.run(t, script, nobody)
	if res.ExitCode != 0 {
		t.Fatalf("exit %+v; output:\n%s", res, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 4 || lines[0] != "1777 0" || lines[1] != "700 65534" {
		t.Fatalf("/tmp and /secrets: %q", lines)
	}
	if strings.Contains(out, "LOG-WRITABLE") || strings.Contains(out, "LOG-LINKABLE") {
		t.Fatalf("the task wrote into /alloc/logs:\n%s", out)
	}
	if !strings.Contains(out, "log\n") || !strings.Contains(out, "alloc-ok") {
		t.Fatalf("the task could not read its log or write /alloc:\n%s", out)
	}
	if fi, err := os.Stat(filepath.Join(tr.taskDir, "tmp")); err != nil || fi.Mode() != os.ModeDir|os.ModeSticky|0o777 {
		t.Fatalf("task tmp/ on the host: %v (%v)", fi.Mode(), err)
	}
}

// An exec task runs under the default seccomp filter (Nomad's exec driver
// has none): a new user namespace, a mount, keyctl and bpf are refused
// even to a task holding Nomad's default capabilities, ordinary work is
// not; in the host's pid namespace ptrace is refused too.
func TestExecSeccomp(t *testing.T) {
	tr := newExecTree(t)
	script := `grep '^Seccomp:' /proc/self/status; ` +
		`unshare -U true 2>/dev/null && echo USERNS; ` +
		`unshare -m true 2>/dev/null && echo MOUNTNS; ` +
		`mount -t tmpfs none /tmp 2>/dev/null && echo MOUNTED; ` +
		`sh -c 'echo child' ; echo done`
	res, out := tr.run(t, script, nobody)
	if res.ExitCode != 0 {
		t.Fatalf("exit %+v; output:\n%s", res, out)
	}
	for _, bad := range []string{"USERNS", "MOUNTNS", "MOUNTED"} {
		if strings.Contains(out, bad) {
			t.Errorf("the filter let %s through:\n%s", bad, out)
		}
	}
	if !strings.Contains(out, "Seccomp:\t2") || !strings.Contains(out, "child\ndone") {
		t.Fatalf("not filtered, or ordinary work refused:\n%s", out)
	}
}

// pid_mode = "host" is the agent's to allow: a task recorded before the
// configuration changed is refused at its launch too.
func TestExecHostModesRefusedUnlessAllowed(t *testing.T) {
	tr := newExecTree(t)
	for _, c := range []struct {
		cfg  *ExecConfig
		want string
	}{{&ExecConfig{PIDMode: ModeHost}, "pid_mode"}, {&ExecConfig{IPCMode: ModeHost}, "ipc_mode"}} {
		_, err := NewExec(newWatcher(t), ExecOptions{ChrootEnv: testChrootEnv}).Start(context.Background(), &StartRequest{
			Command: "/bin/true", TaskDir: tr.taskDir, SharedDir: tr.shared, Exec: c.cfg, User: nobody,
			MountHelper: []string{testNsexec},
		})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "not allowed") {
			t.Fatalf("%s host: %v", c.want, err)
		}
	}
}

// Only 0, 1 and 2 reach a task: a descriptor the agent inherited without
// close-on-exec (a shell's 7</) does not, under exec or raw_exec.
func TestInheritedDescriptorsDoNotReachTasks(t *testing.T) {
	tr := newExecTree(t)
	root, err := os.Open("/")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	// As inherited: no close-on-exec.
	if _, err := unix.FcntlInt(root.Fd(), unix.F_SETFD, 0); err != nil {
		t.Fatal(err)
	}
	fd := strconv.Itoa(int(root.Fd()))
	script := `ls -l /proc/self/fd/` + fd + ` 2>/dev/null && echo LEAKED; echo checked`
	res, out := tr.run(t, script, nobody)
	if res.ExitCode != 0 || strings.Contains(out, "LEAKED") || !strings.Contains(out, "checked") {
		t.Fatalf("exec task: %+v\n%s", res, out)
	}
}
