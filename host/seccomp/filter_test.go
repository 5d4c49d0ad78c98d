//go:build amd64 || arm64

package seccomp

import (
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// call is a struct seccomp_data.
type call struct {
	nr   uint32
	arch uint32
	args [6]uint64
}

// eval runs prog on c as the kernel does, for the instructions assemble
// emits; anything else is an error, so the program cannot grow past what
// the kernel's action cache reads. readArgs says whether it loaded an
// argument: the cache cannot decide such a call once, and the kernel runs
// the filter every time.
func eval(prog []unix.SockFilter, c call) (action uint32, readArgs bool, err error) {
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case ldAbs:
			switch k := in.K; {
			case k == offNr:
				acc = c.nr
			case k == offArch:
				acc = c.arch
			case k >= offArgs && k < offArgs+48 && k%4 == 0:
				readArgs = true
				v := c.args[(k-offArgs)/8]
				if (k-offArgs)%8 == 4 { // little-endian: the high half
					v >>= 32
				}
				acc = uint32(v)
			default:
				return 0, readArgs, fmt.Errorf("pc %d: load of offset %d", pc, k)
			}
		case jeq, jge, jset:
			var ok bool
			switch in.Code {
			case jeq:
				ok = acc == in.K
			case jge:
				ok = acc >= in.K
			case jset:
				ok = acc&in.K != 0
			}
			if ok {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case ja:
			pc += int(in.K)
		case ret:
			return in.K, readArgs, nil
		default:
			return 0, readArgs, fmt.Errorf("pc %d: instruction %#x", pc, in.Code)
		}
	}
	return 0, readArgs, fmt.Errorf("ran off the end of %d instructions", len(prog))
}

func mustFilter(t testing.TB, p Policy) []unix.SockFilter {
	t.Helper()
	prog, err := Filter(p)
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

func mustEval(t *testing.T, prog []unix.SockFilter, c call) (uint32, bool) {
	t.Helper()
	r, readArgs, err := eval(prog, c)
	if err != nil {
		t.Fatalf("nr %d arch %#x: %v", c.nr, c.arch, err)
	}
	return r, readArgs
}

// maxNr is past every syscall number of amd64 and arm64.
const maxNr = 1024

// The first instructions decide the arch, before the number is even
// loaded: a deny list read in another ABI's numbers refuses nothing.
func TestFilterChecksArchFirst(t *testing.T) {
	prog := mustFilter(t, Policy{})
	want := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 4}, // seccomp_data.arch
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 1, Jf: 0, K: auditArch},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_KILL_PROCESS},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
	}
	if len(prog) < len(want) {
		t.Fatalf("%d instructions", len(prog))
	}
	for i, w := range want {
		if prog[i] != w {
			t.Errorf("instruction %d = %+v, want %+v", i, prog[i], w)
		}
	}
	// Every foreign arch is killed, whatever the number: getpid, and the
	// calls the deny list refuses natively.
	foreign := []uint32{unix.AUDIT_ARCH_I386, unix.AUDIT_ARCH_ARM, unix.AUDIT_ARCH_X86_64, unix.AUDIT_ARCH_AARCH64, 0}
	for _, arch := range foreign {
		if arch == auditArch {
			continue
		}
		for nr := uint32(0); nr < maxNr; nr++ {
			if r, _ := mustEval(t, prog, call{nr: nr, arch: arch}); r != retKill {
				t.Fatalf("arch %#x nr %d: %#x, want KILL_PROCESS", arch, nr, r)
			}
		}
	}
}

func TestFilterX32(t *testing.T) {
	prog := mustFilter(t, Policy{})
	tests := []struct {
		nr   uint32
		want uint32
	}{
		{x32Bit | unix.SYS_GETPID, retKill},
		{x32Bit | unix.SYS_MOUNT, retKill},
		{x32Bit, retKill},
		// A tracer's "skip this call": the kernel answers ENOSYS.
		{0xffffffff, retAllow},
	}
	if !hasX32 {
		// No x32 on this arch: numbers that high are the kernel's ENOSYS.
		tests = []struct {
			nr   uint32
			want uint32
		}{{x32Bit | unix.SYS_GETPID, retAllow}, {0xffffffff, retAllow}}
	}
	for _, tt := range tests {
		if r, _ := mustEval(t, prog, call{nr: tt.nr, arch: auditArch}); r != tt.want {
			t.Errorf("nr %#x: %#x, want %#x", tt.nr, r, tt.want)
		}
	}
}

// Every rule refuses its call with its errno, whatever the arguments;
// every other number is allowed; the ptrace group follows the policy.
func TestFilterDecidesEveryNumber(t *testing.T) {
	all, err := rules(Policy{DenyPtrace: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Policy{{}, {DenyPtrace: true}} {
		t.Run(fmt.Sprintf("DenyPtrace=%v", p.DenyPtrace), func(t *testing.T) {
			prog := mustFilter(t, p)
			rs, err := rules(p)
			if err != nil {
				t.Fatal(err)
			}
			byNr := map[uint32]rule{}
			for _, r := range rs {
				byNr[r.nr] = r
			}
			ptraceGroup := map[string]bool{"ptrace": true, "process_vm_readv": true, "process_vm_writev": true}
			for _, r := range all {
				if _, ok := byNr[r.nr]; ok == (ptraceGroup[r.name] && !p.DenyPtrace) {
					t.Errorf("%s refused: %v", r.name, ok)
				}
			}
			garbage := [6]uint64{}
			for i := range garbage {
				garbage[i] = ^uint64(0)
			}
			for nr := uint32(0); nr < maxNr; nr++ {
				want := uint32(retAllow)
				r, ok := byNr[nr]
				if ok && r.when == nil {
					want = retErrno(r.errno)
				}
				if ok && r.when != nil {
					continue // TestFilterArguments
				}
				for _, args := range [][6]uint64{{}, garbage} {
					if got, _ := mustEval(t, prog, call{nr: nr, arch: auditArch, args: args}); got != want {
						t.Errorf("nr %d (%s) args %x: %#x, want %#x", nr, r.name, args[0], got, want)
					}
				}
			}
		})
	}
}

func TestFilterArguments(t *testing.T) {
	prog := mustFilter(t, Policy{})
	eperm := retErrno(unix.EPERM)
	const hi = 1 << 32
	tests := []struct {
		name string
		nr   uint32
		arg  uint64
		want uint32
	}{
		{"fork", unix.SYS_CLONE, uint64(unix.SIGCHLD), retAllow},
		{"thread", unix.SYS_CLONE, unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND |
			unix.CLONE_SYSVSEM | unix.CLONE_THREAD | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID, retAllow},
		{"vfork+pidfd", unix.SYS_CLONE, unix.CLONE_VM | unix.CLONE_VFORK | unix.CLONE_PIDFD | uint64(unix.SIGCHLD), retAllow},
		{"NEWNS", unix.SYS_CLONE, unix.CLONE_NEWNS | uint64(unix.SIGCHLD), eperm},
		{"NEWUTS", unix.SYS_CLONE, unix.CLONE_NEWUTS, eperm},
		{"NEWIPC", unix.SYS_CLONE, unix.CLONE_NEWIPC, eperm},
		{"NEWUSER", unix.SYS_CLONE, unix.CLONE_NEWUSER | uint64(unix.SIGCHLD), eperm},
		{"NEWPID", unix.SYS_CLONE, unix.CLONE_NEWPID, eperm},
		{"NEWNET", unix.SYS_CLONE, unix.CLONE_NEWNET, eperm},
		{"NEWCGROUP", unix.SYS_CLONE, unix.CLONE_NEWCGROUP, eperm},
		// The kernel reads lower_32_bits of clone's flags.
		{"NEWUSER in the high half", unix.SYS_CLONE, unix.CLONE_NEWUSER * hi, retAllow},
		{"NEWUSER with a high half", unix.SYS_CLONE, unix.CLONE_NEWUSER | hi, eperm},
		// Exit signal 128+: clone(2) has no CLONE_NEWTIME.
		{"bit 0x80", unix.SYS_CLONE, 0x80 | uint64(unix.SIGCHLD), retAllow},

		{"PER_LINUX", unix.SYS_PERSONALITY, 0x0, retAllow},
		{"PER_LINUX32", unix.SYS_PERSONALITY, 0x8, retAllow},
		{"UNAME26", unix.SYS_PERSONALITY, 0x20000, retAllow},
		{"PER_LINUX32|UNAME26", unix.SYS_PERSONALITY, 0x20008, retAllow},
		{"query", unix.SYS_PERSONALITY, 0xffffffff, retAllow},
		{"ADDR_NO_RANDOMIZE", unix.SYS_PERSONALITY, 0x0040000, eperm},
		{"READ_IMPLIES_EXEC", unix.SYS_PERSONALITY, 0x0400000, eperm},
		{"PER_BSD", unix.SYS_PERSONALITY, 0x6, eperm},
		// personality takes an unsigned int.
		{"PER_LINUX with a high half", unix.SYS_PERSONALITY, hi, retAllow},
		{"ADDR_NO_RANDOMIZE with a high half", unix.SYS_PERSONALITY, hi | 0x0040000, eperm},

		{"AF_UNIX", unix.SYS_SOCKET, unix.AF_UNIX, retAllow},
		{"AF_INET6", unix.SYS_SOCKET, unix.AF_INET6, retAllow},
		{"AF_NETLINK", unix.SYS_SOCKET, unix.AF_NETLINK, retAllow},
		{"AF_NFC", unix.SYS_SOCKET, unix.AF_NFC, retAllow},
		{"AF_MCTP", unix.SYS_SOCKET, unix.AF_MCTP, retAllow},
		{"AF_ALG", unix.SYS_SOCKET, unix.AF_ALG, eperm},
		{"AF_VSOCK", unix.SYS_SOCKET, unix.AF_VSOCK, eperm},
		// socket's domain is an int: the high half does not hide AF_ALG.
		{"AF_ALG with a high half", unix.SYS_SOCKET, hi | unix.AF_ALG, eperm},
	}
	for _, tt := range tests {
		got, readArgs := mustEval(t, prog, call{nr: tt.nr, arch: auditArch, args: [6]uint64{tt.arg, ^uint64(0), ^uint64(0)}})
		if got != tt.want {
			t.Errorf("%s (nr %d, %#x): %#x, want %#x", tt.name, tt.nr, tt.arg, got, tt.want)
		}
		if !readArgs {
			t.Errorf("%s: decided without reading the argument", tt.name)
		}
	}
}

// Only the calls tested on their arguments make the kernel run the
// filter; every other number is decided by the action cache, at no cost
// per call (see the package doc, "Cost").
func TestFilterReadsArgumentsOfThreeCallsOnly(t *testing.T) {
	for _, p := range []Policy{{}, {DenyPtrace: true}} {
		prog := mustFilter(t, p)
		var read []uint32
		for nr := uint32(0); nr < maxNr; nr++ {
			if _, readArgs := mustEval(t, prog, call{nr: nr, arch: auditArch}); readArgs {
				read = append(read, nr)
			}
		}
		want := []uint32{unix.SYS_CLONE, unix.SYS_PERSONALITY, unix.SYS_SOCKET}
		if !sameSet(read, want) {
			t.Errorf("DenyPtrace=%v: arguments read for %v, want %v", p.DenyPtrace, read, want)
		}
		t.Logf("DenyPtrace=%v: %d instructions", p.DenyPtrace, len(prog))
	}
}

func sameSet(a, b []uint32) bool {
	m := map[uint32]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}

func TestAssembleRefusesBadTables(t *testing.T) {
	for name, rs := range map[string][]rule{
		"duplicate":  {deny("a", 1), deny("b", 1)},
		"argument 6": {{name: "x", nr: 1, errno: unix.EPERM, when: &argTest{arg: 6, op: in, values: []uint32{1}}}},
		"no values":  {{name: "x", nr: 1, errno: unix.EPERM, when: &argTest{op: notIn}}},
		"two masks":  {{name: "x", nr: 1, errno: unix.EPERM, when: &argTest{op: anyBit, values: []uint32{1, 2}}}},
	} {
		if _, err := assemble(rs); err == nil {
			t.Errorf("%s: assembled", name)
		}
	}
}

// A table too big for one conditional jump over half of it still
// assembles, through ja, and decides every number.
func TestAssembleLongJumps(t *testing.T) {
	var rs []rule
	for nr := uint32(0); nr < 600; nr += 2 {
		r := deny(fmt.Sprint(nr), nr)
		if nr%10 == 0 {
			r.when = &argTest{arg: 1, op: in, values: []uint32{7}}
		}
		rs = append(rs, r)
	}
	prog, err := assemble(rs)
	if err != nil {
		t.Fatal(err)
	}
	long := 0
	for _, in := range prog {
		if in.Code == ja {
			long++
		}
	}
	if long == 0 {
		t.Fatalf("no ja in %d instructions", len(prog))
	}
	eperm := retErrno(unix.EPERM)
	for nr := uint32(0); nr < 700; nr++ {
		for _, arg := range []uint64{7, 8} {
			want := uint32(retAllow)
			if nr < 600 && nr%2 == 0 && (nr%10 != 0 || arg == 7) {
				want = eperm
			}
			if got, _ := mustEval(t, prog, call{nr: nr, arch: auditArch, args: [6]uint64{0, arg}}); got != want {
				t.Errorf("nr %d arg %d: %#x, want %#x", nr, arg, got, want)
			}
		}
	}
}

func BenchmarkFilter(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Filter(Policy{}); err != nil {
			b.Fatal(err)
		}
	}
}
