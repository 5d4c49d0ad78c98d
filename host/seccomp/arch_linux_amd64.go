package seccomp

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_X86_64
	hasX32    = true
)

// archRules are the refused calls that exist on x86_64 only.
func archRules() []rule {
	return []rule{
		// Direct port I/O: the host's hardware.
		deny("iopl", unix.SYS_IOPL),
		deny("ioperm", unix.SYS_IOPERM),
		// Obsolete calls of the module loader and of old libc, refused as
		// Docker refuses them: nothing current needs them, and what they
		// still reach in the kernel is rarely exercised.
		deny("create_module", unix.SYS_CREATE_MODULE),
		deny("get_kernel_syms", unix.SYS_GET_KERNEL_SYMS),
		deny("query_module", unix.SYS_QUERY_MODULE),
		deny("uselib", unix.SYS_USELIB),
		deny("ustat", unix.SYS_USTAT),
		deny("sysfs", unix.SYS_SYSFS),
		deny("_sysctl", unix.SYS__SYSCTL),
	}
}
