package nsexec

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// become switches the calling thread to c. It must run on the thread that
// execs the task (Main locks it), with nothing else left to do as root: the
// kernel's rules for capabilities across setuid and execve are per
// thread, and the other threads of this short-lived process end with the
// exec.
func become(c *Cred) error {
	keep := c.Caps != nil || c.KeepCaps
	var mask [2]uint32
	if keep {
		for _, n := range c.Caps {
			mask[n/32] |= 1 << (uint(n) % 32)
		}
		// The bounding set first: dropping needs CAP_SETPCAP, which the
		// task may not keep.
		for n := 0; n <= lastCap(); n++ {
			if mask[n/32]&(1<<(uint(n)%32)) != 0 {
				continue
			}
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(n), 0, 0, 0); err != nil {
				return fmt.Errorf("drop capability %d from the bounding set: %w", n, err)
			}
		}
		if err := unix.Prctl(unix.PR_SET_KEEPCAPS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("keep capabilities: %w", err)
		}
	}
	// Raw syscalls: Go's own wrappers change every thread of the process,
	// and this thread's keep-caps flag would not be the one that counts.
	gs := make([]uint32, len(c.Groups))
	copy(gs, c.Groups)
	var p uintptr
	if len(gs) > 0 {
		p = uintptr(unsafe.Pointer(&gs[0]))
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(gs)), p, 0); e != 0 {
		return fmt.Errorf("setgroups: %w", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(c.GID), uintptr(c.GID), uintptr(c.GID)); e != 0 {
		return fmt.Errorf("setgid %d: %w", c.GID, e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(c.UID), uintptr(c.UID), uintptr(c.UID)); e != 0 {
		return fmt.Errorf("setuid %d: %w", c.UID, e)
	}
	if !keep {
		return nil
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := [2]unix.CapUserData{
		{Effective: mask[0], Permitted: mask[0], Inheritable: mask[0]},
		{Effective: mask[1], Permitted: mask[1], Inheritable: mask[1]},
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	// Ambient capabilities are what a non-root user keeps across execve of
	// an ordinary binary.
	for _, n := range c.Caps {
		if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, uintptr(n), 0, 0); err != nil {
			return fmt.Errorf("raise ambient capability %s: %w", capNames[n], err)
		}
	}
	return nil
}

// lastCap is the highest capability this kernel knows.
func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return len(capNames) - 1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return len(capNames) - 1
	}
	return n
}
