//go:build unix

package api

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// pollInterval bounds how late a consumer without pidfds learns that a
// hosted plugin exited. Nothing waits on that but go-plugin's bookkeeping
// (Client.Exited), and a follower watches a handful of processes, so a
// kill(2) per process four times a second costs nothing worth saving, and
// it is four times as prompt as go-plugin's own poll.
const pollInterval = 250 * time.Millisecond

// pollWatch asks every interval whether its pid still exists: what works
// on every unix system for a process that is not one's child. Unlike a
// pidfd it cannot tell a pid reused by another process from the plugin;
// within one interval of the plugin's exit that is as unlikely as it is
// harmless here (go-plugin would only mark the client exited later).
type pollWatch struct {
	pid      int
	interval time.Duration
	exists   func(pid int) (bool, error)
}

// watchPoll checks that pid exists now and returns its watch; exists is
// pidExists but for tests.
func watchPoll(pid int, interval time.Duration, exists func(int) (bool, error)) (*pollWatch, error) {
	ok, err := exists(pid)
	if err != nil {
		return nil, fmt.Errorf("reattach: plugin process %d: %w", pid, err)
	}
	if !ok {
		return nil, fmt.Errorf("reattach: plugin process %d: %w", pid, errProcessGone)
	}
	return &pollWatch{pid: pid, interval: interval, exists: exists}, nil
}

func (w *pollWatch) wait(ctx context.Context) error {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		ok, err := w.exists(w.pid)
		if err != nil {
			return fmt.Errorf("watch plugin process %d: %w", w.pid, err)
		}
		if !ok {
			return nil
		}
	}
}

// pidExists asks with kill(pid, 0). EPERM means the process exists but is
// not ours to signal, as a hosted plugin usually is not: the agent runs it
// as root or as the job's user. (go-plugin's own poll takes that for an
// exit.)
func pidExists(pid int) (bool, error) {
	return existsFromKill(pid, unix.Kill(pid, 0))
}

func existsFromKill(pid int, err error) (bool, error) {
	switch {
	case err == nil, errors.Is(err, unix.EPERM):
		return true, nil
	case errors.Is(err, unix.ESRCH):
		return false, nil
	default:
		return false, fmt.Errorf("kill(%d, 0): %w", pid, err)
	}
}
