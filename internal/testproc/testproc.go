// Package testproc holds process helpers shared by tests that start real
// processes.
package testproc

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// TB is the part of testing.TB the helpers use.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// WaitGone waits until pid has exited, woken by its pidfd (an event, not a
// poll), and fails the test if it is still running after d.
func WaitGone(t TB, pid int, d time.Duration) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return
	}
	if err != nil {
		t.Fatalf("pidfd of %d: %v", pid, err)
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(d)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("pid %d still running after %s", pid, d)
		}
		n, err := unix.Poll(fds, int(left/time.Millisecond)+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("poll pidfd of %d: %v", pid, err)
		}
		if n > 0 {
			return
		}
	}
}
