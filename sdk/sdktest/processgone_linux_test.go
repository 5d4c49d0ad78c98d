package sdktest_test

import "golang.org/x/sys/unix"

// processGone: pid's process has exited (a pidfd is readable then, even
// before it is reaped) or never was.
func processGone(pid int) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return true
	}
	defer unix.Close(fd)
	n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
	return err == nil && n == 1
}
