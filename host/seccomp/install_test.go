//go:build amd64 || arm64

package seccomp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envHelper); mode != "" {
		os.Exit(helperMain(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the filter is installed as nsexec installs it, with CAP_SYS_ADMIN")
	}
}

// helperCmd is this test binary as a helper in mode with policy, in a
// mount namespace of its own and a session of its own: without a
// controlling terminal a control run's vhangup hangs up nothing.
func helperCmd(ctx context.Context, t testing.TB, mode, policy string, args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, self, args...)
	// A race-enabled helper would sleep a second at exit for its report.
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	cmd.Env = append(os.Environ(), envHelper+"="+mode, envPolicy+"="+policy, "SELF="+self, "GORACE="+gorace)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWNS, Setsid: true}
	return cmd
}

// runHelper runs a helper and returns its stdout; err is its exit.
func runHelper(t testing.TB, mode, policy string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := helperCmd(ctx, t, mode, policy, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if s := stderr.String(); s != "" {
		t.Logf("helper %s %s %v stderr:\n%s", mode, policy, args, s)
	}
	return string(out), err
}

// results finds the helper's line of results in out.
func results(t testing.TB, out string) map[string]result {
	t.Helper()
	for line := range strings.Lines(out) {
		if rest, ok := strings.CutPrefix(line, resultsPrefix); ok {
			var rs map[string]result
			if err := json.Unmarshal([]byte(rest), &rs); err != nil {
				t.Fatalf("results %q: %v", rest, err)
			}
			return rs
		}
	}
	t.Fatalf("no results in the helper's output:\n%s", out)
	return nil
}

// probe runs the named probes in one helper under policy.
func probe(t testing.TB, policy string, names ...string) map[string]result {
	t.Helper()
	out, err := runHelper(t, "probe", policy, names...)
	if err != nil {
		t.Fatalf("helper (%s): %v\n%s", policy, err, out)
	}
	return results(t, out)
}

func errnoName(n int) string {
	switch n {
	case 0:
		return "success"
	case -1:
		return "not an errno"
	}
	return fmt.Sprintf("%s (%d)", unix.ErrnoName(syscall.Errno(n)), n)
}

// expect checks that each probe got its errno.
func expect(t *testing.T, policy string, got map[string]result, want map[string]syscall.Errno) {
	t.Helper()
	for name, w := range want {
		r, ok := got[name]
		if !ok {
			t.Errorf("%s: %s: no result", policy, name)
			continue
		}
		if r.Errno != int(w) {
			t.Errorf("%s: %s: %s %q, want %s", policy, name, errnoName(r.Errno), r.Detail, errnoName(int(w)))
		}
	}
}

// expectKernel checks that without the filter no probe got the errno the
// filter gives it: only then is the filtered run's errno the filter's.
// What the kernel does answer depends on its configuration and sysctls
// (io_uring_disabled, max_user_namespaces), so it is only logged.
func expectKernel(t *testing.T, got map[string]result, filtered map[string]syscall.Errno) {
	t.Helper()
	for name, f := range filtered {
		r, ok := got[name]
		switch {
		case !ok:
			t.Errorf("without the filter: %s: no result", name)
		case r.Errno == int(f):
			t.Errorf("without the filter: %s: %s too, the test cannot tell the filter's answer", name, errnoName(r.Errno))
		default:
			t.Logf("without the filter: %s: %s", name, errnoName(r.Errno))
		}
	}
}

// Every refused call, called with arguments the kernel would refuse by
// itself, gets its rule's errno from the filter, and something else from
// the kernel without it: the answer is the filter's.
func TestRefusedCalls(t *testing.T) {
	needRoot(t)
	rs, err := rules(Policy{DenyPtrace: true})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	byName := map[string]rule{}
	for _, r := range rs {
		if r.when != nil && r.name != "clone" { // all ones in clone's flags holds every namespace flag
			continue
		}
		names = append(names, "raw:"+r.name)
		byName["raw:"+r.name] = r
	}
	native := probe(t, policyNone, names...)
	filtered := probe(t, policyDenyPtrace, names...)
	defaults := probe(t, policyDefault, names...)
	for _, name := range names {
		r := byName[name]
		if got := filtered[name].Errno; got != int(r.errno) {
			t.Errorf("%s: %s under the filter, want %s", r.name, errnoName(got), errnoName(int(r.errno)))
		}
		if got := native[name].Errno; got == int(r.errno) {
			t.Errorf("%s: the kernel answers %s without the filter too: the test cannot tell the filter's answer", r.name, errnoName(got))
		}
		switch r.name {
		case "ptrace", "process_vm_readv", "process_vm_writev":
			// Policy{} leaves them to the kernel.
			if d, n := defaults[name].Errno, native[name].Errno; d != n {
				t.Errorf("%s with Policy{}: %s, want the kernel's %s", r.name, errnoName(d), errnoName(n))
			}
		default:
			if got := defaults[name].Errno; got != int(r.errno) {
				t.Errorf("%s with Policy{}: %s, want %s", r.name, errnoName(got), errnoName(int(r.errno)))
			}
		}
	}
	t.Logf("%d calls refused", len(names))
}

// No new namespace: neither unshare nor clone with a namespace flag,
// while a plain fork and exec works.
func TestNamespacesRefused(t *testing.T) {
	needRoot(t)
	flags := map[string]int{
		"NEWNS": unix.CLONE_NEWNS, "NEWUTS": unix.CLONE_NEWUTS, "NEWIPC": unix.CLONE_NEWIPC,
		"NEWUSER": unix.CLONE_NEWUSER, "NEWPID": unix.CLONE_NEWPID, "NEWNET": unix.CLONE_NEWNET,
		"NEWCGROUP": unix.CLONE_NEWCGROUP,
	}
	names := []string{"unshare-newuser", "fork-exec"}
	for _, f := range flags {
		names = append(names, fmt.Sprintf("clone-ns:%#x", f))
	}
	// Without the filter unshare(CLONE_NEWUSER) gets EINVAL: Go has threads.
	refused := map[string]syscall.Errno{"unshare-newuser": unix.EPERM}
	for _, f := range flags {
		refused[fmt.Sprintf("clone-ns:%#x", f)] = unix.EPERM
	}
	native := probe(t, policyNone, names...)
	expectKernel(t, native, refused)
	expect(t, policyNone, native, map[string]syscall.Errno{"fork-exec": 0})
	got := probe(t, policyDefault, append(names, "clone-raw-newuser")...)
	refused["clone-raw-newuser"] = unix.EPERM
	refused["fork-exec"] = 0
	expect(t, policyDefault, got, refused)
	if d := got["fork-exec"].Detail; d != "forked" {
		t.Errorf("fork-exec printed %q", d)
	}
}

// Calls with real arguments, which succeed as root without the filter
// (here: clone3's size of 0 gets EINVAL from the kernel).
func TestRefusedWithRealArguments(t *testing.T) {
	needRoot(t)
	names := []string{"keyctl", "bpf-map", "mount-tmpfs", "io_uring_setup", "clone3"}
	refused := map[string]syscall.Errno{
		"keyctl": unix.EPERM, "bpf-map": unix.EPERM, "mount-tmpfs": unix.EPERM,
		"io_uring_setup": unix.EPERM, "clone3": unix.ENOSYS,
	}
	expectKernel(t, probe(t, policyNone, names...), refused)
	for _, policy := range []string{policyDefault, policyDenyPtrace} {
		expect(t, policy, probe(t, policy, names...), refused)
	}
}

func TestSocketFamilies(t *testing.T) {
	needRoot(t)
	alg, vsock := fmt.Sprintf("socket:%d", unix.AF_ALG), fmt.Sprintf("socket:%d", unix.AF_VSOCK)
	inet, unixSock := fmt.Sprintf("socket:%d", unix.AF_INET), fmt.Sprintf("socket:%d", unix.AF_UNIX)
	expectKernel(t, probe(t, policyNone, alg, vsock), map[string]syscall.Errno{alg: unix.EPERM, vsock: unix.EPERM})
	expect(t, policyDefault, probe(t, policyDefault, alg, vsock, inet, unixSock), map[string]syscall.Errno{
		alg: unix.EPERM, vsock: unix.EPERM, inet: 0, unixSock: 0,
	})
}

func TestPersonality(t *testing.T) {
	needRoot(t)
	// In this order: 0x8 changes the helper's personality, 0x0 restores it.
	allowed := []string{"personality:0xffffffff", "personality:0x8", "personality:0x100000000", "personality:0x0"}
	refused := []string{"personality:0x0040000", "personality:0x0400000", "personality:0x100040000"}
	want := map[string]syscall.Errno{}
	for _, n := range allowed {
		want[n] = 0
	}
	for _, n := range refused {
		want[n] = unix.EPERM
	}
	got := probe(t, policyDefault, append(allowed, refused...)...)
	expect(t, policyDefault, got, want)
	// The kernel, given the high half, saw PER_LINUX: the previous
	// personality, 0x8, came back from the call before it.
	if d := got["personality:0x100000000"].Detail; d != "8" {
		t.Errorf("personality(1<<32) returned %s, want 8", d)
	}
}

func TestPtracePolicy(t *testing.T) {
	needRoot(t)
	names := []string{"ptrace-seize", "process_vm_readv"}
	got := probe(t, policyDefault, names...)
	expect(t, policyDefault, got, map[string]syscall.Errno{"ptrace-seize": 0, "process_vm_readv": 0})
	if d := got["process_vm_readv"].Detail; d != "remote" {
		t.Errorf("process_vm_readv read %q", d)
	}
	expect(t, policyDenyPtrace, probe(t, policyDenyPtrace, names...),
		map[string]syscall.Errno{"ptrace-seize": unix.EPERM, "process_vm_readv": unix.EPERM})
}

// What a task ordinarily does keeps working under the filter.
func TestOrdinaryWork(t *testing.T) {
	needRoot(t)
	names := []string{"fork-exec", "threads", "tcp", "socketpair", "read-file", "adjtimex", "clock_adjtime", "chroot", "seccomp-mode"}
	for _, policy := range []string{policyDefault, policyDenyPtrace} {
		got := probe(t, policy, names...)
		want := map[string]syscall.Errno{}
		for _, n := range names {
			want[n] = 0
		}
		expect(t, policy, got, want)
		for name, detail := range map[string]string{"fork-exec": "forked", "tcp": "ping", "socketpair": "pong", "seccomp-mode": "2"} {
			if d := got[name].Detail; d != detail {
				t.Errorf("%s: %s: %q, want %q", policy, name, d, detail)
			}
		}
	}
}

// nsexec's order: the filter as root, then become's calls (setgroups,
// setresgid, setresuid, prctl, capset, ambient capabilities), close_range,
// chdir and execve all pass it; the exec'ed program runs as nobody with
// Nomad's capabilities and the filter, and so do its children.
func TestFilterSurvivesBecomeAndExec(t *testing.T) {
	needRoot(t)
	// The shell reads its own status (a redirection of the shell itself),
	// then runs this test binary as a probe that inherits the filter.
	script := `while IFS= read -r l; do
	case $l in Uid:*|Seccomp:*|Seccomp_filters:*|CapEff:*|CapAmb:*) printf '%s\n' "$l";; esac
done </proc/self/status
PLUGINHOST_SECCOMP_HELPER=probe PLUGINHOST_SECCOMP_POLICY=inherited "$SELF" unshare-newuser keyctl mount-tmpfs fork-exec seccomp-mode uid`
	out, err := runHelper(t, "become", policyDefault, script)
	if err != nil {
		t.Fatalf("become and exec: %v\n%s", err, out)
	}
	t.Logf("the exec'ed shell and its child:\n%s", out)
	var mask uint64
	for _, c := range nomadExecCaps() {
		mask |= 1 << c
	}
	for _, line := range []string{
		"Seccomp:\t2",
		"Seccomp_filters:\t1",
		"Uid:\t65534\t65534\t65534\t65534",
		fmt.Sprintf("CapEff:\t%016x", mask),
		fmt.Sprintf("CapAmb:\t%016x", mask),
	} {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("the exec'ed shell's status lacks %q:\n%s", line, out)
		}
	}
	got := results(t, out)
	expect(t, "inherited", got, map[string]syscall.Errno{
		"unshare-newuser": unix.EPERM, "keyctl": unix.EPERM, "mount-tmpfs": unix.EPERM,
		"fork-exec": 0, "seccomp-mode": 0, "uid": 0,
	})
	if got["seccomp-mode"].Detail != "2" || got["uid"].Detail != "65534" {
		t.Errorf("the shell's child: seccomp mode %s, uid %s", got["seccomp-mode"].Detail, got["uid"].Detail)
	}
}

// After become the thread has no CAP_SYS_ADMIN and no no_new_privs: the
// kernel refuses the filter, and Install says what to do about it.
func TestInstallNeedsCapSysAdmin(t *testing.T) {
	needRoot(t)
	out, err := runHelper(t, "unprivileged", "")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	line, ok := strings.CutPrefix(strings.TrimSpace(out), resultsPrefix)
	if !ok {
		t.Fatalf("output %q", out)
	}
	if want := fmt.Sprintf("%d ", unix.EACCES); !strings.HasPrefix(line, want) || !strings.Contains(line, "before dropping privileges") {
		t.Errorf("Install without CAP_SYS_ADMIN: %q, want EACCES and advice", line)
	}
}

// killedBy reports the signal that ended a helper, or 0.
func killedBy(err error) syscall.Signal {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return 0
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0
	}
	return ws.Signal()
}

// A call of another ABI kills the process: the deny list is written in
// native numbers only.
func TestForeignABIKilled(t *testing.T) {
	needRoot(t)
	if len(archProbes()) == 0 {
		t.Skip("no other ABI a process of this arch can call into")
	}
	native := probe(t, policyNone, "i386-getpid", "x32-getpid", "minus-one")
	if native["i386-getpid"].Errno != 0 {
		t.Skipf("int $0x80 does not work here (%s): no IA32 emulation", errnoName(native["i386-getpid"].Errno))
	}
	expect(t, policyNone, native, map[string]syscall.Errno{"x32-getpid": unix.ENOSYS, "minus-one": unix.ENOSYS})
	for _, name := range []string{"i386-getpid", "i386-mount", "x32-getpid"} {
		for _, policy := range []string{policyDefault, policyDenyPtrace} {
			out, err := runHelper(t, "probe", policy, name)
			if sig := killedBy(err); sig != unix.SIGSYS {
				t.Errorf("%s %s: %v (signal %v), want killed by SIGSYS\n%s", policy, name, err, sig, out)
			}
		}
	}
	// A tracer's -1 is not an x32 call.
	expect(t, policyDefault, probe(t, policyDefault, "minus-one"), map[string]syscall.Errno{"minus-one": unix.ENOSYS})
}
