//go:build unix

package sdk

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// sessionLeader reports whether this process leads its own session, so that
// no terminal's Ctrl-C aimed at someone else can reach it.
func sessionLeader() bool {
	sid, err := unix.Getsid(0)
	return err == nil && sid == os.Getpid()
}

func ignoreBrokenPipe() { signal.Ignore(syscall.SIGPIPE) }
