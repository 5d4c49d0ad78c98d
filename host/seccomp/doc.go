// Package seccomp is the default seccomp filter of exec tasks: it refuses
// what Docker's default profile refuses to a container without
// CAP_SYS_ADMIN, and allows everything else.
//
// # Why a deny list
//
// Docker's profile is an allow list with a default of EPERM. This filter
// is its complement, a deny list with a default of ALLOW, so that a
// harmless call added to the kernel after the list was written (Docker's
// list, being older, refuses file_getattr, listns and rseq_slice_yield
// today) keeps working in exec tasks, which Nomad's exec driver starts
// without any filter. The price: a dangerous call added to the kernel is
// allowed until it is added here. When Docker's profile changes, compare
// the two (see "What is refused").
//
// # What is refused
//
// Every call that Docker's default profile refuses on amd64 and arm64 to a
// container with Docker's default capabilities (which hold every one
// Nomad's exec driver grants by default) is refused with EPERM; the table
// is rules and archRules. As in Docker, some refusals depend on the
// arguments or answer otherwise:
//
//   - clone3 gets ENOSYS, so that glibc falls back to clone, whose flags a
//     filter can read (clone3's are behind a pointer). A Go program that
//     asks os/exec for SysProcAttr.UseCgroupFD or a time namespace uses
//     clone3 without a fallback and fails.
//   - clone is refused only with a namespace flag (CLONE_NEWNS, NEWUTS,
//     NEWIPC, NEWUSER, NEWPID, NEWNET, NEWCGROUP). Not CLONE_NEWTIME: in
//     clone(2) its bit is part of the exit signal.
//   - personality is refused unless its argument is 0x0, 0x8, 0x20000,
//     0x20008 or 0xffffffff.
//   - socket is refused for AF_ALG and AF_VSOCK only.
//   - ptrace, process_vm_readv and process_vm_writev are allowed: from
//     Linux 4.8 on seccomp runs after a tracer has changed a call, so
//     ptrace no longer gets around the filter, and in a private pid
//     namespace the task reaches only its own processes. Policy.DenyPtrace
//     refuses the three for a task in the host's pid namespace.
//   - chroot, adjtimex and clock_adjtime are allowed: chroot needs
//     CAP_SYS_CHROOT, which Nomad grants exec tasks, and the kernel checks
//     CAP_SYS_TIME before adjtimex or clock_adjtime changes the clock.
//     Refusing clock_adjtime would refuse adjtimex's reads too: glibc and
//     musl implement adjtimex with it.
//
// Where this filter differs from Docker's profile:
//
//   - name_to_handle_at is refused (Docker allows it): its handles are
//     only good for open_by_handle_at, which both refuse.
//   - Numbers the kernel never implemented (afs_syscall, getpmsg, putpmsg,
//     security, tuxcall, vserver) and calls newer than Docker's list are
//     left to the kernel.
//   - The refusals do not depend on the task's capabilities: a task given
//     CAP_SYS_TIME by cap_add still cannot call settimeofday, nor one
//     given CAP_SYS_ADMIN mount, as a Docker container could.
//
// Arguments are compared on their low 32 bits. The kernel reads each
// argument tested here as 32 bits wide (clone's flags through
// lower_32_bits, personality's unsigned int, socket's int), so a 64-bit
// comparison, as libseccomp makes, could only be fooled by the high half:
// to it AF_ALG + 1<<32 is "above 40", to the kernel it is AF_ALG.
//
// # Architectures
//
// A syscall number means another call in another ABI: i386's 21 is mount,
// x86_64's 21 is access. The filter therefore first checks that the call
// comes from the native ABI (seccomp_data.arch is AUDIT_ARCH_X86_64 or
// AUDIT_ARCH_AARCH64) and kills the process otherwise. It kills x32 calls
// too: they carry x86_64's arch and differ only by __X32_SYSCALL_BIT in
// the number. Only -1 passes that test: a tracer skips a call by setting
// its number to -1 (strace's fault injection does), and the kernel
// answers it with ENOSYS. So a 32-bit binary (i386, x32, arm32) cannot run
// in an exec task with the filter on: it is killed by SIGSYS at its first
// system call. Docker keeps one list per ABI instead: three tables to keep
// in step, for binaries an exec task rarely runs.
//
// The syscall numbers come from golang.org/x/sys/unix, per architecture;
// only amd64 and arm64 have a table (arch_linux_*.go), and on any other
// architecture Filter and Install fail with errors.ErrUnsupported rather
// than start a task unfiltered.
//
// # When to install
//
// The helper (host/nsexec) installs the filter on the thread that will
// exec the task, after every mount and pivot_root (the filter refuses
// them) and before become changes the credentials:
//
//	buildRoot, pivot, chdir  (mounts: before the filter)
//	seccomp.Install          (still root with CAP_SYS_ADMIN)
//	become                   (setgroups, setresgid, setresuid, prctl, capset)
//	syscall.Exec             (execve: the task inherits the filter)
//
// Before become, because the kernel lets a thread install a filter only
// with CAP_SYS_ADMIN or with no_new_privs set, and exec tasks run without
// no_new_privs as under Nomad (a setuid binary in the task still works);
// runc does the same when NoNewPrivileges is false. Everything become and
// the exec use is allowed, and a test runs that sequence under the filter.
//
// The filter is installed without SECCOMP_FILTER_FLAG_TSYNC: a filter is
// per thread, execve keeps the calling thread's and ends all the others,
// so the task inherits exactly the installing thread's filter. TSYNC would
// only also filter the helper's Go runtime threads, which never run task
// code. What matters is that the goroutine stays on the installing thread
// until the exec; Install locks it there.
//
// # Cost
//
// The program only loads the syscall number and arch and jumps on
// constants until it reaches the few calls it tests arguments of, so the
// kernel's action cache (Linux 5.11 and later) decides every other number
// once, when the filter is installed, and never runs the filter for them.
// Only clone, personality and socket (and the refused calls) run it: a
// binary search of a few instructions, then the argument test.
//
// Measured on the 2-core test machine: Install takes about 70 µs in a
// warm process (BenchmarkInstall), 50 of them in the kernel, which
// compiles the program and fills the cache; a one-instruction filter
// takes 10. A fresh helper pays more: an exec of /bin/true through a Go
// helper took 0.1 to 0.2 ms longer with the filter (BenchmarkLaunch, of
// about 3.5 ms; a one-instruction filter alone costs some 0.07 ms). Once
// the task runs, a call the cache decides costs about 30 ns more than
// without any filter (the kernel's entry path for filtered threads), a
// call that runs the filter about 60 ns more (BenchmarkSyscall).
//
// # Why no library
//
// libseccomp-golang needs cgo and libseccomp at run time. The pure-Go
// github.com/elastic/go-seccomp-bpf does argument tests, but sends a call
// of a foreign arch to the policy's default action (for a deny list,
// ALLOW: the i386 bypass above), can refuse with EPERM only (not ENOSYS
// for clone3), and brings go-ucfg and yaml into the module graph.
// golang.org/x/net/bpf assembles typed instructions but leaves the jump
// offsets to the caller, which is the only hard part here, and its VM
// reads packets big-endian where seccomp_data is native. The program uses
// five instruction forms; assembling them is a few lines of x/sys/unix.
package seccomp
