// Package int80 makes an i386 system call from a 64-bit process on amd64
// (int $0x80), for the seccomp tests only: it is how a 64-bit task would
// reach the kernel's 32-bit syscall table, which a filter that did not
// check the arch would read with x86_64's numbers. Assembly, not cgo: the
// tests must build without a C toolchain.
package int80
