package int80

// Syscall makes i386 system call nr with up to three arguments (ebx, ecx,
// edx, truncated to 32 bits) and returns eax: the result, or -errno.
func Syscall(nr, a1, a2, a3 uintptr) int32
