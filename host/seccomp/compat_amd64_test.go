package seccomp

import (
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/pluginhost/pluginhost/host/seccomp/internal/int80"
)

// i386 syscall numbers.
const (
	i386Getpid = 20
	i386Mount  = 21 // x86_64's 21 is access, which the filter allows
)

// archProbes are the calls of other ABIs a 64-bit process can make on
// amd64: i386 through int $0x80, and x32 numbers.
func archProbes() map[string]func() (string, error) {
	all := ^uintptr(0)
	i386 := func(nr uintptr) (string, error) {
		r := int80.Syscall(nr, all, all, all)
		if r < 0 {
			return "", syscall.Errno(-r)
		}
		return strconv.Itoa(int(r)), nil
	}
	return map[string]func() (string, error){
		"i386-getpid": func() (string, error) { return i386(i386Getpid) },
		"i386-mount":  func() (string, error) { return i386(i386Mount) },
		"x32-getpid": func() (string, error) {
			r, _, e := unix.RawSyscall(x32Bit|unix.SYS_GETPID, 0, 0, 0)
			return strconv.Itoa(int(r)), errnoOrNil(e)
		},
		"minus-one": func() (string, error) {
			_, _, e := unix.RawSyscall(all, 0, 0, 0)
			return "", errnoOrNil(e)
		},
	}
}
