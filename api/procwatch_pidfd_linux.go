package api

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// pidfdWatch waits for a pidfd to become readable, which it does when its
// process exits; the runtime's poller waits for it without holding a
// thread, and a pid reused meanwhile cannot fool it.
type pidfdWatch struct {
	f *os.File
}

// watchPidfd opens a pidfd for pid.
func watchPidfd(pid int) (*pidfdWatch, error) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil, fmt.Errorf("reattach: plugin process %d: %w (%w)", pid, errProcessGone, err)
		}
		return nil, fmt.Errorf("reattach: pidfd_open %d: %w", pid, err)
	}
	return &pidfdWatch{f: os.NewFile(uintptr(fd), "pidfd")}, nil
}

func (w *pidfdWatch) wait(ctx context.Context) error {
	defer w.f.Close()
	rc, err := w.f.SyscallConn()
	if err != nil {
		return fmt.Errorf("pidfd: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = w.f.SetReadDeadline(aLongTimeAgo) })
	defer stop()
	err = rc.Read(func(fd uintptr) bool {
		n, perr := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
		return perr != nil || n > 0
	})
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("pidfd: %w", err)
	}
	return nil
}

// aLongTimeAgo is a deadline in the past: it wakes a blocked read at once.
var aLongTimeAgo = time.Unix(1, 0)
