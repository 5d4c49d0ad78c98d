package driver

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/pluginhost/pluginhost/host/config"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/nsexec"
)

var nobody = &User{Name: "nobody", UID: 65534, GID: 65534, Home: "/nonexistent"}

// execConfig is an exec task's config with Nomad's capability set and
// cap_drop applied.
func execConfig(t *testing.T, pidMode string, capDrop ...string) *ExecConfig {
	t.Helper()
	caps, err := jobspec.ExecCapabilities(&jobspec.TaskConfig{CapDrop: capDrop}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &ExecConfig{PIDMode: pidMode, Caps: caps}
}

// testChrootEnv is Nomad's default chroot_env.
var testChrootEnv = config.DefaultChrootEnv()

// testExecOptions is the exec driver as an agent runs it by default, with
// the host's pid namespace allowed for the tests that ask for it.
var testExecOptions = ExecOptions{ChrootEnv: testChrootEnv, Seccomp: true, AllowHostPID: true}

// runExec runs script under /bin/sh as an exec task in a fresh task dir and
// returns its result and output.
func runExec(t *testing.T, script string, cfg *ExecConfig, user *User, mounts []nsexec.Mount) (*ExitResult, string, string) {
	t.Helper()
	return runExecEnv(t, testChrootEnv, script, cfg, user, mounts)
}

// runExecEnv is runExec with chroot_env env.
func runExecEnv(t *testing.T, env map[string]string, script string, cfg *ExecConfig, user *User, mounts []nsexec.Mount) (*ExitResult, string, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the exec driver needs root")
	}
	alloc := t.TempDir()
	taskDir, shared := filepath.Join(alloc, "web"), filepath.Join(alloc, "alloc")
	for _, d := range []string{filepath.Join(taskDir, "local"), filepath.Join(taskDir, "secrets"), shared} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	res, out := runTask(t, NewExec(newWatcher(t), ExecOptions{ChrootEnv: env, Seccomp: true, AllowHostPID: true}), &StartRequest{
		Command: "/bin/sh", Args: []string{"-c", script}, Env: []string{"PATH=/usr/bin:/bin"},
		TaskDir: taskDir, SharedDir: shared, Exec: cfg, User: user,
		Mounts: mounts, MountHelper: []string{testNsexec},
	})
	return res, out, taskDir
}

// An exec task sees its own root: /local and /alloc are there, the host's
// files outside chroot_env are not, it is pid 1 of its own namespace and
// runs as nobody; and nothing it mounted is left on the host.
func TestExecIsolation(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "host-only")
	if err := os.WriteFile(secret, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `echo pid=$$; id -u; id -g; test -d /local && echo local; test -d /alloc && echo alloc; ` +
		`test -e ` + secret + ` && echo HOST-VISIBLE; ls /proc | grep -c '^[0-9]' ; ` +
		`stat -c %a /secrets; echo hi > /local/f && echo wrote-local; pwd`
	res, out, taskDir := runExec(t, script, execConfig(t, ""), nobody, nil)
	if res.ExitCode != 0 {
		t.Fatalf("exit %+v; output:\n%s", res, out)
	}
	// /proc counts the shell and ls (and grep): a handful, not the host's.
	want := []string{"pid=1", "65534", "65534", "local", "alloc"}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 9 || strings.Join(lines[:5], ",") != strings.Join(want, ",") {
		t.Fatalf("output %q, want it to start %q", out, want)
	}
	if strings.Contains(out, "HOST-VISIBLE") {
		t.Fatalf("the task saw a host file outside chroot_env:\n%s", out)
	}
	if lines[6] != "700" || lines[7] != "wrote-local" || lines[8] != "/" {
		t.Fatalf("secrets mode / local write / cwd: %q", lines[6:])
	}
	if b, err := os.ReadFile(filepath.Join(taskDir, "local", "f")); err != nil || string(b) != "hi\n" {
		t.Fatalf("/local is not the task dir's local/: %q %v", b, err)
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mi), taskDir) {
		t.Fatalf("the task's mounts leaked into the host's namespace")
	}
}

// A task running as nobody keeps Nomad's default capabilities, so it can
// write into a root-owned volume (CAP_DAC_OVERRIDE); cap_drop takes it away.
func TestExecCapabilities(t *testing.T) {
	vol := t.TempDir()
	if err := os.Chmod(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	mounts := []nsexec.Mount{{Source: vol, Target: "/srv/data"}}
	res, out, _ := runExec(t, `echo ok > /srv/data/f && echo wrote; grep CapEff /proc/self/status`, execConfig(t, ""), nobody, mounts)
	if res.ExitCode != 0 || !strings.Contains(out, "wrote") {
		t.Fatalf("exit %+v; nobody could not write the root-owned volume:\n%s", res, out)
	}
	if b, err := os.ReadFile(filepath.Join(vol, "f")); err != nil || string(b) != "ok\n" {
		t.Fatalf("write did not reach the volume: %q %v", b, err)
	}
	res, out, _ = runExec(t, `echo ok > /srv/data/g && echo WROTE`, execConfig(t, "", "dac_override"), nobody, mounts)
	if strings.Contains(out, "WROTE") {
		t.Fatalf("cap_drop dac_override still let nobody write a root-owned dir: %+v\n%s", res, out)
	}
}

// pid_mode = "host" shares the host's pid namespace.
func TestExecHostPIDMode(t *testing.T) {
	res, out, _ := runExec(t, `echo $$`, execConfig(t, ModeHost), nobody, nil)
	if res.ExitCode != 0 || strings.TrimSpace(out) == "1" {
		t.Fatalf("exit %+v, pid %q: want the host's pid", res, out)
	}
}

// A command that is not in the task's root fails the task before it runs,
// and says so.
func TestExecMissingCommand(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the exec driver needs root")
	}
	alloc := t.TempDir()
	_, err := startRefused(t, NewExec(newWatcher(t), testExecOptions), &StartRequest{
		Command: "no-such-binary", Env: []string{"PATH=/usr/bin:/bin"},
		TaskDir: alloc, SharedDir: alloc, User: nobody, MountHelper: []string{testNsexec},
	})
	if !strings.Contains(err.Error(), "not found in the task's PATH") {
		t.Fatalf("launch error %v", err)
	}
}

// The /proc entries that configure the whole machine are read-only to an
// exec task, and those that show kernel internals are covered, as runc
// does: the task keeps CAP_DAC_OVERRIDE, which is the only check on
// writing /proc/sysrq-trigger or an IRQ's affinity.
func TestExecProcFenced(t *testing.T) {
	res, out, _ := runExec(t, `cat /proc/self/mountinfo; echo ---; cat /proc/timer_list /proc/keys | wc -c; ls /proc/acpi | wc -l`,
		execConfig(t, ""), nobody, nil)
	if res.ExitCode != 0 {
		t.Fatalf("exit %+v; output:\n%s", res, out)
	}
	mountinfo, rest, ok := strings.Cut(out, "---\n")
	if !ok {
		t.Fatalf("output %q", out)
	}
	// Field 5 is the mount point, field 6 its own options.
	opts := map[string]string{}
	for line := range strings.SplitSeq(mountinfo, "\n") {
		if f := strings.Fields(line); len(f) > 5 {
			opts[f[4]] = f[5]
		}
	}
	checked := 0
	for _, p := range []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"} {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		checked++
		if o, ok := opts[p]; !ok || !slices.Contains(strings.Split(o, ","), "ro") {
			t.Errorf("%s in the task: mount options %q (mounted: %v), want read-only", p, o, ok)
		}
	}
	if checked == 0 {
		t.Fatal("this host has none of the read-only /proc entries")
	}
	if got := strings.Fields(rest); len(got) != 2 || got[0] != "0" || got[1] != "0" {
		t.Errorf("/proc/timer_list and /proc/keys (bytes), /proc/acpi (entries): %q, want 0 0", rest)
	}
}

// An exec task keeps CAP_MKNOD and CAP_DAC_OVERRIDE, as on Nomad, but no
// device node it makes can be opened: everywhere it can write is nodev
// (Nomad's devices cgroup does this job there). Char 1,3 is /dev/null,
// standing in for the host's disk. The bound /dev/null still works, and
// so does a block volume's node (bound, a mount of its own).
func TestExecNoDeviceNodes(t *testing.T) {
	vol := t.TempDir()
	mounts := []nsexec.Mount{{Source: vol, Target: "/srv/data"}, {Source: "/dev/null", Target: "/srv/blk", File: true}}
	script := `for d in /dev /tmp /local /alloc /srv/data; do mknod $d/n c 1 3 && echo made $d; echo x 2>/dev/null > $d/n && echo OPENED $d; done; ` +
		`echo x > /dev/null && echo null-ok; echo x > /srv/blk && echo blk-ok`
	res, out, _ := runExec(t, script, execConfig(t, ""), nobody, mounts)
	if res.ExitCode != 0 {
		t.Fatalf("exit %+v; output:\n%s", res, out)
	}
	if !strings.Contains(out, "made /tmp") {
		t.Fatalf("the task could not make a node at all, so this test proves nothing:\n%s", out)
	}
	if strings.Contains(out, "OPENED") {
		t.Fatalf("the task opened a device node it made:\n%s", out)
	}
	if !strings.Contains(out, "null-ok") || !strings.Contains(out, "blk-ok") {
		t.Fatalf("the bound device nodes stopped working:\n%s", out)
	}
}

// chroot_env is read-only all the way down: a mount below one of its
// directories (a separate /usr/local, a container's /etc/hosts) is not
// left writable to a task that keeps CAP_DAC_OVERRIDE.
func TestExecChrootEnvSubmountsReadOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the exec driver needs root")
	}
	env := t.TempDir()
	sub := filepath.Join(env, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", sub, "tmpfs", 0, "size=64k"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(sub, syscall.MNT_DETACH) })
	chroot := maps.Clone(testChrootEnv)
	chroot[env] = "/envx"
	res, out, _ := runExecEnv(t, chroot, `test -d /envx/sub && echo seen; touch /envx/sub/f 2>/dev/null && echo WROTE; exit 0`, execConfig(t, ""), nobody, nil)
	if res.ExitCode != 0 || !strings.Contains(out, "seen") {
		t.Fatalf("exit %+v; the task does not see the chroot_env submount:\n%s", res, out)
	}
	if strings.Contains(out, "WROTE") {
		t.Fatalf("the task wrote into a mount below chroot_env:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(sub, "f")); err == nil {
		t.Fatal("the task's file is on the host's mount")
	}
}
