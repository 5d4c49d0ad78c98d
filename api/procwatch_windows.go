package api

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/windows"
)

func watchProcess(pid int) (processWatch, error) {
	w, err := watchHandle(pid)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// handleWatch holds a handle to the plugin's process, which Windows
// signals when the process exits. Holding it also keeps the pid from
// being reused meanwhile, as a pidfd does on Linux.
type handleWatch struct {
	h windows.Handle
}

// watchHandle opens pid with just the right to wait for it, which
// Windows grants for processes of other users more readily than the
// query rights go-plugin's own poll asks for.
func watchHandle(pid int) (*handleWatch, error) {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		// OpenProcess says "the parameter is incorrect" for a pid
		// that names no process.
		if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
			return nil, fmt.Errorf("reattach: plugin process %d: %w (%w)", pid, errProcessGone, err)
		}
		return nil, fmt.Errorf("reattach: open plugin process %d: %w", pid, err)
	}
	// An exited process lives on, signalled, while anyone holds a
	// handle to it: the pid alone does not say it is running.
	if ev, err := windows.WaitForSingleObject(h, 0); err == nil && ev == windows.WAIT_OBJECT_0 {
		_ = windows.CloseHandle(h)
		return nil, fmt.Errorf("reattach: plugin process %d: %w", pid, errProcessGone)
	}
	return &handleWatch{h: h}, nil
}

// wait blocks a thread in WaitForMultipleObjects, as os.Process.Wait does
// on Windows: on the process, and on an event that ctx's end sets.
func (w *handleWatch) wait(ctx context.Context) error {
	defer windows.CloseHandle(w.h)
	cancel, err := windows.CreateEvent(nil, 1, 0, nil)
	if err != nil {
		return fmt.Errorf("watch plugin process: %w", err)
	}
	defer windows.CloseHandle(cancel)
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		_ = windows.SetEvent(cancel)
	})
	// The event must not be closed under a SetEvent still running.
	defer func() {
		if !stop() {
			<-fired
		}
	}()
	ev, err := windows.WaitForMultipleObjects([]windows.Handle{w.h, cancel}, false, windows.INFINITE)
	switch {
	case err != nil:
		return fmt.Errorf("watch plugin process: %w", err)
	case ev == windows.WAIT_OBJECT_0:
		return nil
	default:
		return ctx.Err()
	}
}
