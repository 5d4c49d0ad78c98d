package seccomp

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Policy is what varies between tasks; everything else in the filter is
// the same for every exec task.
type Policy struct {
	// DenyPtrace refuses ptrace and the two calls that read and write
	// another process's memory under the same permission check
	// (process_vm_readv, process_vm_writev). Set it when the task shares
	// the host's pid namespace (pid_mode = "host"): then it can see, and
	// with the same uid reach, processes that are not its own.
	DenyPtrace bool
}

// Filter returns the program Install loads for p, for tests and for
// inspection (a disassembler reads it as classic BPF).
func Filter(p Policy) ([]unix.SockFilter, error) {
	rs, err := rules(p)
	if err != nil {
		return nil, err
	}
	return assemble(rs)
}

// Install loads p's filter on the calling thread, for good: the thread
// and whatever it execs keep it. Call it from the thread that will
// execve the task, after the last mount, pivot_root and setns of the
// setup (the filter refuses them) and before the task's credentials and
// capabilities are set, while the thread still has CAP_SYS_ADMIN: the
// task runs without no_new_privs, and without it the kernel lets only
// CAP_SYS_ADMIN install a filter. See the package doc, "When to install".
//
// Install locks the calling goroutine to its thread and never unlocks it:
// the filter belongs to this thread alone, and a goroutine that moved to
// another thread before the exec would start the task unfiltered.
func Install(p Policy) error {
	prog, err := Filter(p)
	if err != nil {
		return err
	}
	runtime.LockOSThread()
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	// No flags: not TSYNC (see the package doc), and not SPEC_ALLOW, so
	// whether a filtered task gets the kernel's speculation mitigations
	// stays the administrator's choice (spec_store_bypass_disable,
	// spectre_v2_user).
	_, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	switch errno {
	case 0:
		return nil
	case unix.EACCES:
		return fmt.Errorf("seccomp: installing the filter needs CAP_SYS_ADMIN (without no_new_privs): install it before dropping privileges: %w", errno)
	default:
		return fmt.Errorf("seccomp: installing the filter: %w", errno)
	}
}

// Offsets in struct seccomp_data, which the kernel fills in native byte
// order. The argument words are the low halves on a little-endian
// machine; every architecture with a table here is one.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// argLo is the offset of the low 32 bits of argument i.
func argLo(i int) uint32 { return offArgs + 8*uint32(i) }

// maxInsns is the kernel's BPF_MAXINSNS.
const maxInsns = 4096

// x32Bit marks a syscall number of the x32 ABI on x86_64
// (__X32_SYSCALL_BIT); the arch field cannot tell x32 from x86_64.
const x32Bit = 0x40000000

// Return values of the filter.
const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retKill  = unix.SECCOMP_RET_KILL_PROCESS
)

func retErrno(e unix.Errno) uint32 {
	return unix.SECCOMP_RET_ERRNO | uint32(e)&unix.SECCOMP_RET_DATA
}

// A rule refuses one system call, or, with when set, some of its calls.
type rule struct {
	name  string
	nr    uint32
	errno unix.Errno
	when  *argTest
}

// argTest is a test of one argument's low 32 bits. The kernel reads every
// argument tested here as 32 bits wide (clone's flags through
// lower_32_bits, personality's unsigned int, socket's int domain), so the
// high half changes nothing the kernel does and a test of it could only
// be fooled by it.
type argTest struct {
	arg int
	op  argOp
	// values holds the mask for anyBit, the list for in and notIn.
	values []uint32
}

type argOp int

const (
	// anyBit: refused when any bit of values[0] is set.
	anyBit argOp = iota
	// in: refused when the argument is one of values.
	in
	// notIn: refused unless the argument is one of values.
	notIn
)

func stmt(code uint16, k uint32) unix.SockFilter {
	return unix.SockFilter{Code: code, K: k}
}

func jump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

const (
	ldAbs = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	jge   = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	jset  = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	ja    = unix.BPF_JMP | unix.BPF_JA
	ret   = unix.BPF_RET | unix.BPF_K
)

// assemble builds the program. Its shape is kept to what the kernel's
// action cache can evaluate without running it (loads of nr and arch,
// jumps on constants, constant returns): every syscall number not tested
// on its arguments is then allowed or refused once per filter, when it is
// installed, and the filter itself never runs for those calls.
// The rules may come in any order.
func assemble(rs []rule) ([]unix.SockFilter, error) {
	// Room for the header, two instructions a rule and the search's own.
	prog := make([]unix.SockFilter, 0, 8+3*len(rs))
	prog = append(prog,
		// The arch first: a syscall number means another call in another
		// ABI (i386's 21 is mount, x86_64's 21 is access), so a deny list
		// read in the wrong ABI refuses nothing.
		stmt(ldAbs, offArch),
		jump(jeq, auditArch, 1, 0),
		stmt(ret, retKill),
		stmt(ldAbs, offNr),
	)
	if hasX32 {
		prog = append(prog,
			jump(jge, x32Bit, 0, 2),
			// -1 is how a tracer skips a call (strace's fault injection),
			// and seccomp runs after the tracer has changed it; the kernel
			// answers ENOSYS itself.
			jump(jeq, 0xffffffff, 1, 0),
			stmt(ret, retKill),
		)
	}
	sorted := slices.Clone(rs)
	slices.SortFunc(sorted, func(a, b rule) int { return cmp.Compare(a.nr, b.nr) })
	for i := 1; i < len(sorted); i++ {
		if sorted[i].nr == sorted[i-1].nr {
			return nil, fmt.Errorf("seccomp: %s and %s are both syscall %d", sorted[i-1].name, sorted[i].name, sorted[i].nr)
		}
	}
	prog, err := search(prog, sorted)
	if err != nil {
		return nil, err
	}
	if len(prog) > maxInsns {
		return nil, fmt.Errorf("seccomp: %d instructions, the kernel takes %d", len(prog), maxInsns)
	}
	return prog, nil
}

// leafRules is how many rules search checks one after the other.
const leafRules = 4

// search appends rs (sorted by number, with the number in the
// accumulator) to prog as a binary search on the number, ending in ALLOW
// where no rule matches. Not a plain chain: the kernel runs the program for every
// syscall number when it is installed (to fill its action cache), so the
// instructions on the way to an allowed number are paid some five hundred
// times per launch. Measured on the 2-core test machine, the seccomp call
// takes about 105 µs with a chain of this list and 50 µs with the search
// (10 µs with a filter of one instruction).
func search(prog []unix.SockFilter, rs []rule) ([]unix.SockFilter, error) {
	if len(rs) <= leafRules {
		for _, r := range rs {
			deny := retErrno(r.errno)
			if r.when == nil {
				prog = append(prog, jump(jeq, r.nr, 0, 1), stmt(ret, deny))
				continue
			}
			body, err := r.when.body(deny)
			if err != nil {
				return nil, fmt.Errorf("seccomp: %s: %w", r.name, err)
			}
			if len(body) > 255 {
				return nil, fmt.Errorf("seccomp: %s: %d instructions of argument tests, a jump reaches 255", r.name, len(body))
			}
			// The body ends in a return on every path, so the rules after
			// it can count on the number still being in the accumulator.
			prog = append(prog, jump(jeq, r.nr, 0, uint8(len(body))))
			prog = append(prog, body...)
		}
		return append(prog, stmt(ret, retAllow)), nil
	}
	mid := len(rs) / 2
	// The jump over the lower half, its length known once that is emitted.
	at := len(prog)
	prog = append(prog, jump(jge, rs[mid].nr, 0, 0))
	prog, err := search(prog, rs[:mid])
	if err != nil {
		return nil, err
	}
	if below := len(prog) - at - 1; below <= 255 {
		prog[at].Jt = uint8(below)
	} else {
		// A conditional jump reaches 255 instructions; ja reaches any.
		prog[at].Jf = 1
		prog = slices.Insert(prog, at+1, stmt(ja, uint32(below)))
	}
	return search(prog, rs[mid:])
}

// body tests the argument and returns deny or allow.
func (t *argTest) body(deny uint32) ([]unix.SockFilter, error) {
	if t.arg < 0 || t.arg > 5 {
		return nil, fmt.Errorf("argument %d: syscalls have arguments 0 to 5", t.arg)
	}
	body := []unix.SockFilter{stmt(ldAbs, argLo(t.arg))}
	switch t.op {
	case anyBit:
		if len(t.values) != 1 {
			return nil, fmt.Errorf("a bit test takes one mask, not %d", len(t.values))
		}
		return append(body,
			jump(jset, t.values[0], 0, 1),
			stmt(ret, deny),
			stmt(ret, retAllow),
		), nil
	case in, notIn:
		if len(t.values) == 0 || len(t.values) > 250 {
			return nil, fmt.Errorf("%d values to compare with, want 1 to 250", len(t.values))
		}
		match, other := deny, uint32(retAllow)
		if t.op == notIn {
			match, other = other, match
		}
		n := len(t.values)
		for i, v := range t.values {
			// A match jumps over the rest of the list and the other
			// return, to the match's return.
			body = append(body, jump(jeq, v, uint8(n-i), 0))
		}
		return append(body, stmt(ret, other), stmt(ret, match)), nil
	default:
		return nil, fmt.Errorf("unknown argument test %d", t.op)
	}
}
