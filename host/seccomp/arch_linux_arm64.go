package seccomp

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_AARCH64
	hasX32    = false
)

// archRules are the refused calls that exist on arm64 only: none. Its
// table has no iopl, ioperm, vm86, umount or any of the obsolete calls
// x86_64 still numbers.
func archRules() []rule { return nil }
