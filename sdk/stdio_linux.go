package sdk

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// nonBlockingStdio returns a writer for the same pipe as f whose writes never
// wait: when the pipe is full, or its reader is gone, a write fails at once
// with EAGAIN or EPIPE instead of blocking the caller. A plugin's stdout and
// stderr are pipes to a host that may be dead, restarting, or simply not
// reading, and a plugin that blocks on a log line stops answering CSI calls.
//
// The trick needs a file description of its own, so that setting O_NONBLOCK
// does not leak into f (which a shell or sibling process may share): Linux
// gives one when a pipe is reopened through /proc/self/fd. The *os.File is
// created while the descriptor is blocking, so the runtime does not put it in
// its poller (which would park the writer instead of failing), and only then
// switched to non-blocking.
//
// Anything but a pipe (a terminal, a regular file, /dev/null) is returned as
// is: those do not fill up. ok reports whether f was replaced.
func nonBlockingStdio(f *os.File) (nb *os.File, ok bool, err error) {
	fi, err := f.Stat()
	if err != nil {
		return f, false, fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	if fi.Mode()&os.ModeNamedPipe == 0 {
		return f, false, nil
	}
	path := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	// O_NONBLOCK on open: a named FIFO with no reader fails with ENXIO
	// instead of blocking the open forever. (Anonymous pipes never block
	// on open; their lost reader shows up as EPIPE on write.)
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ENXIO) {
			return nil, false, fmt.Errorf("reopen %s: reader is gone: %w", f.Name(), err)
		}
		return f, false, fmt.Errorf("reopen %s: %w", f.Name(), err)
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		_ = syscall.Close(fd)
		return f, false, fmt.Errorf("reopen %s: %w", f.Name(), err)
	}
	nb = os.NewFile(uintptr(fd), f.Name())
	if err := syscall.SetNonblock(fd, true); err != nil {
		_ = nb.Close()
		return f, false, fmt.Errorf("reopen %s: %w", f.Name(), err)
	}
	return nb, true, nil
}
