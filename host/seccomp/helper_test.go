//go:build amd64 || arm64

package seccomp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The tests start this test binary again as a helper: it installs the
// filter (or not, for a control run) in a process of its own and then
// makes real system calls. Every helper starts in a mount namespace of its
// own, so a mount the filter failed to refuse lands nowhere.
const (
	envHelper = "PLUGINHOST_SECCOMP_HELPER" // the helper's mode
	envPolicy = "PLUGINHOST_SECCOMP_POLICY" // policy* below
)

// Policies of a probe helper.
const (
	policyNone       = "none"       // no filter: what the kernel answers
	policyDefault    = "default"    // Policy{}
	policyDenyPtrace = "denyptrace" // Policy{DenyPtrace: true}
	policyInherited  = "inherited"  // a filter came with the exec; touch nothing
)

// result is one probe's outcome: Errno 0 is success, -1 an error that
// is not an errno (in Detail).
type result struct {
	Errno  int    `json:"errno"`
	Detail string `json:"detail,omitempty"`
}

// resultsPrefix starts the helper's line of results on stdout.
const resultsPrefix = "probes: "

// helperMain is the helper; it returns the exit status.
func helperMain(mode string, args []string) int {
	// The filter is per thread: everything after it happens on this one.
	runtime.LockOSThread()
	// A helper killed by SIGSYS leaves no core file.
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}); err != nil {
		return fail("rlimit: %v", err)
	}
	switch mode {
	case "probe":
		return probeMain(os.Getenv(envPolicy), args)
	case "become":
		return becomeMain(args)
	case "unprivileged":
		return unprivilegedMain()
	case "bench-install":
		return benchInstallMain(args)
	case "bench-syscall":
		return benchSyscallMain(os.Getenv(envPolicy), args)
	case "exec":
		return execMain(os.Getenv(envPolicy), args)
	default:
		return fail("unknown helper mode %q", mode)
	}
}

func fail(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "seccomp helper: "+format+"\n", args...)
	return 3
}

// setUp readies a helper for policy: its mounts stop propagating (a mount
// a broken filter let through stays in the helper's namespace), then the
// filter.
func setUp(policy string) error {
	if policy == policyInherited {
		return nil
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("making / a slave mount: %w", err)
	}
	switch policy {
	case policyNone:
		return nil
	case policyDefault:
		return Install(Policy{})
	case policyDenyPtrace:
		return Install(Policy{DenyPtrace: true})
	default:
		return fmt.Errorf("unknown policy %q", policy)
	}
}

func probeMain(policy string, names []string) int {
	if err := setUp(policy); err != nil {
		return fail("%v", err)
	}
	out := map[string]result{}
	for _, name := range names {
		detail, err := runProbe(name)
		r := result{Detail: detail}
		var errno syscall.Errno
		switch {
		case err == nil:
		case errors.As(err, &errno):
			r.Errno = int(errno)
		default:
			r.Errno, r.Detail = -1, err.Error()
		}
		out[name] = r
	}
	b, err := json.Marshal(out)
	if err != nil {
		return fail("%v", err)
	}
	fmt.Printf("%s%s\n", resultsPrefix, b)
	return 0
}

// runProbe makes the calls probe name stands for. "raw:NAME" is rule NAME
// with every argument all ones: the filter refuses it before the kernel
// reads any, and a kernel that gets it refuses such arguments (EFAULT,
// EBADF, EINVAL), so even a control run changes nothing.
func runProbe(name string) (string, error) {
	kind, arg, _ := strings.Cut(name, ":")
	switch kind {
	case "raw":
		rs, err := rules(Policy{DenyPtrace: true})
		if err != nil {
			return "", err
		}
		for _, r := range rs {
			if r.name == arg {
				const all = ^uintptr(0)
				_, _, e := unix.RawSyscall6(uintptr(r.nr), all, all, all, all, all, all)
				return "", errnoOrNil(e)
			}
		}
		return "", fmt.Errorf("no rule %q", arg)
	case "clone-ns":
		// clone through os/exec, with a namespace flag.
		flag, err := strconv.ParseUint(arg, 0, 64)
		if err != nil {
			return "", err
		}
		cmd := exec.Command("/bin/true")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: uintptr(flag)}
		return "", cmd.Run()
	case "personality":
		p, err := strconv.ParseUint(arg, 0, 64)
		if err != nil {
			return "", err
		}
		r, _, e := unix.RawSyscall(unix.SYS_PERSONALITY, uintptr(p), 0, 0)
		return strconv.FormatUint(uint64(r), 16), errnoOrNil(e)
	case "socket":
		domain, err := strconv.Atoi(arg)
		if err != nil {
			return "", err
		}
		typ := unix.SOCK_STREAM
		if domain == unix.AF_ALG {
			typ = unix.SOCK_SEQPACKET
		}
		fd, err := unix.Socket(domain, typ|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		return "", err
	}
	f, ok := probes()[name]
	if !ok {
		return "", fmt.Errorf("no probe %q", name)
	}
	return f()
}

func errnoOrNil(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// probes are the calls with real arguments: each works without the filter
// (as root) and changes nothing outside the helper.
func probes() map[string]func() (string, error) {
	m := map[string]func() (string, error){
		"unshare-newuser": func() (string, error) {
			// Without the filter a Go program, having threads, gets EINVAL.
			return "", unix.Unshare(unix.CLONE_NEWUSER)
		},
		"clone-raw-newuser": func() (string, error) {
			// clone itself, not through os/exec. Run under the filter only: a
			// child it made would be a copy of this Go program, and leaves at
			// once.
			pid, _, e := unix.RawSyscall6(unix.SYS_CLONE, unix.CLONE_NEWUSER|uintptr(unix.SIGCHLD), 0, 0, 0, 0, 0)
			if e == 0 && pid == 0 {
				unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
			}
			if e == 0 {
				var ws unix.WaitStatus
				unix.Wait4(int(pid), &ws, 0, nil)
			}
			return "", errnoOrNil(e)
		},
		"fork-exec": func() (string, error) {
			out, err := exec.Command("/bin/sh", "-c", "echo forked").Output()
			return strings.TrimSpace(string(out)), err
		},
		"keyctl": func() (string, error) {
			id, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_USER_KEYRING, true)
			return strconv.Itoa(id), err
		},
		"bpf-map": func() (string, error) {
			// BPF_MAP_CREATE of a one-element array.
			attr := [4]uint32{unix.BPF_MAP_TYPE_ARRAY, 4, 4, 1}
			fd, _, e := unix.RawSyscall(unix.SYS_BPF, unix.BPF_MAP_CREATE, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
			if e == 0 {
				unix.Close(int(fd))
			}
			return "", errnoOrNil(e)
		},
		"mount-tmpfs": func() (string, error) {
			dir, err := os.MkdirTemp("", "seccomp-mount-")
			if err != nil {
				return "", err
			}
			defer os.Remove(dir)
			if err := unix.Mount("seccomptest", dir, "tmpfs", 0, "size=1m"); err != nil {
				return "", err
			}
			return "", unix.Unmount(dir, 0)
		},
		"io_uring_setup": func() (string, error) {
			var params [120]byte // struct io_uring_params, all zero
			fd, _, e := unix.RawSyscall(unix.SYS_IO_URING_SETUP, 4, uintptr(unsafe.Pointer(&params)), 0)
			if e == 0 {
				unix.Close(int(fd))
			}
			return "", errnoOrNil(e)
		},
		"clone3": func() (string, error) {
			// A size of 0: the kernel refuses it with EINVAL, the filter
			// first with ENOSYS.
			_, _, e := unix.RawSyscall(unix.SYS_CLONE3, 0, 0, 0)
			return "", errnoOrNil(e)
		},
		"ptrace-seize": func() (string, error) {
			cmd := exec.Command("/bin/sleep", "60")
			if err := cmd.Start(); err != nil {
				return "", err
			}
			defer cmd.Wait()
			defer cmd.Process.Kill()
			return "", unix.PtraceSeize(cmd.Process.Pid)
		},
		"process_vm_readv": func() (string, error) {
			src, dst := []byte("remote"), make([]byte, 6)
			_, err := unix.ProcessVMReadv(os.Getpid(),
				[]unix.Iovec{{Base: &dst[0], Len: uint64(len(dst))}},
				[]unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(&src[0])), Len: len(src)}}, 0)
			return string(dst), err
		},
		"threads": func() (string, error) {
			// Eight threads alive at once besides this one: the runtime
			// clones new ones (clone without namespace flags).
			const n = 8
			tids := make(chan int, n)
			release := make(chan struct{})
			for range n {
				go func() {
					runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
					tids <- unix.Gettid()
					<-release
				}()
			}
			seen := map[int]bool{unix.Gettid(): true}
			for range n {
				select {
				case tid := <-tids:
					seen[tid] = true
				case <-time.After(10 * time.Second):
					return "", errors.New("threads did not start")
				}
			}
			close(release)
			if len(seen) != n+1 {
				return "", fmt.Errorf("%d distinct threads, want %d", len(seen), n+1)
			}
			return strconv.Itoa(len(seen)), nil
		},
		"tcp": func() (string, error) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return "", err
			}
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				io.Copy(c, c)
			}()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				return "", err
			}
			defer c.Close()
			if _, err := c.Write([]byte("ping")); err != nil {
				return "", err
			}
			b := make([]byte, 4)
			_, err = io.ReadFull(c, b)
			return string(b), err
		},
		"socketpair": func() (string, error) {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return "", err
			}
			defer unix.Close(fds[0])
			defer unix.Close(fds[1])
			if _, err := unix.Write(fds[0], []byte("pong")); err != nil {
				return "", err
			}
			b := make([]byte, 4)
			n, err := unix.Read(fds[1], b)
			return string(b[:n]), err
		},
		"read-file": func() (string, error) {
			b, err := os.ReadFile("/etc/passwd")
			if err == nil && len(b) == 0 {
				err = errors.New("empty")
			}
			return "", err
		},
		"adjtimex": func() (string, error) {
			state, err := unix.Adjtimex(&unix.Timex{})
			return strconv.Itoa(state), err
		},
		"clock_adjtime": func() (string, error) {
			var tx unix.Timex
			state, _, e := unix.RawSyscall(unix.SYS_CLOCK_ADJTIME, unix.CLOCK_REALTIME, uintptr(unsafe.Pointer(&tx)), 0)
			return strconv.Itoa(int(state)), errnoOrNil(e)
		},
		"chroot": func() (string, error) {
			return "", unix.Chroot("/")
		},
		"seccomp-mode": func() (string, error) {
			mode, _, e := unix.RawSyscall(unix.SYS_PRCTL, unix.PR_GET_SECCOMP, 0, 0)
			return strconv.Itoa(int(mode)), errnoOrNil(e)
		},
		"uid": func() (string, error) {
			return strconv.Itoa(unix.Getuid()), nil
		},
	}
	for name, f := range archProbes() {
		m[name] = f
	}
	return m
}

// nomadExecCaps is Nomad's default capability set of exec tasks.
func nomadExecCaps() []int {
	return []int{
		unix.CAP_AUDIT_WRITE, unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE, unix.CAP_FOWNER, unix.CAP_FSETID,
		unix.CAP_KILL, unix.CAP_MKNOD, unix.CAP_NET_BIND_SERVICE, unix.CAP_SETFCAP, unix.CAP_SETGID,
		unix.CAP_SETPCAP, unix.CAP_SETUID, unix.CAP_SYS_CHROOT,
	}
}

// becomeMain does what nsexec does from the filter on: Install as root,
// then what nsexec's become does to reach user nobody with Nomad's
// capabilities, then close_range, chdir and execve of /bin/sh -c args[0].
// A failure names the step the filter broke.
func becomeMain(args []string) int {
	if len(args) != 1 {
		return fail("become: want a script")
	}
	if err := Install(Policy{}); err != nil {
		return fail("%v", err)
	}
	const nobody = 65534
	caps := nomadExecCaps()
	var mask [2]uint32
	for _, c := range caps {
		mask[c/32] |= 1 << (c % 32)
	}
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return fail("cap_last_cap: %v", err)
	}
	last, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return fail("cap_last_cap: %v", err)
	}
	for c := 0; c <= last; c++ {
		if mask[c/32]&(1<<(c%32)) != 0 {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fail("PR_CAPBSET_DROP %d: %v", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_KEEPCAPS, 1, 0, 0, 0); err != nil {
		return fail("PR_SET_KEEPCAPS: %v", err)
	}
	// Raw, on this thread only, as become does.
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
		return fail("setgroups: %v", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, nobody, nobody, nobody); e != 0 {
		return fail("setresgid: %v", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, nobody, nobody, nobody); e != 0 {
		return fail("setresuid: %v", e)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := [2]unix.CapUserData{
		{Effective: mask[0], Permitted: mask[0], Inheritable: mask[0]},
		{Effective: mask[1], Permitted: mask[1], Inheritable: mask[1]},
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fail("capset: %v", err)
	}
	for _, c := range caps {
		if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, uintptr(c), 0, 0); err != nil {
			return fail("PR_CAP_AMBIENT_RAISE %d: %v", c, err)
		}
	}
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fail("close_range: %v", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fail("chdir: %v", err)
	}
	err = syscall.Exec("/bin/sh", []string{"sh", "-c", args[0]}, os.Environ())
	return fail("exec /bin/sh: %v", err)
}

// unprivilegedMain installs the filter as root without CAP_SYS_ADMIN in
// its effective set and without no_new_privs: what nsexec would meet if
// it installed the filter after become. It prints Install's error.
func unprivilegedMain() int {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fail("capget: %v", err)
	}
	data[unix.CAP_SYS_ADMIN/32].Effective &^= 1 << (unix.CAP_SYS_ADMIN % 32)
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fail("capset: %v", err)
	}
	err := Install(Policy{})
	var errno syscall.Errno
	errors.As(err, &errno)
	fmt.Printf("%s%d %v\n", resultsPrefix, int(errno), err)
	return 0
}

// execMain execs args (the benchmark's launch) after installing policy.
func execMain(policy string, args []string) int {
	switch policy {
	case policyNone:
	case policyDefault:
		if err := Install(Policy{}); err != nil {
			return fail("%v", err)
		}
	default:
		return fail("unknown policy %q", policy)
	}
	err := syscall.Exec(args[0], args, os.Environ())
	return fail("exec %s: %v", args[0], err)
}
