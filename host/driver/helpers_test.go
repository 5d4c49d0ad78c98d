package driver

import (
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func newWatcher(t *testing.T) *Watcher {
	t.Helper()
	w, err := NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// killOnCleanup SIGKILLs a process group when the test ends, pass or fail.
func killOnCleanup(t *testing.T, pid int) {
	t.Cleanup(func() { _ = unix.Kill(-pid, syscall.SIGKILL) })
}

// pipeFile returns a writer for a task's stdout/stderr and the reader.
func pipeFile(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

func waitDone(t *testing.T, task Task, d time.Duration) *ExitResult {
	t.Helper()
	select {
	case <-task.Done():
		return task.Result()
	case <-time.After(d):
		t.Fatalf("task did not exit within %s", d)
		return nil
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	_, err := ProcStartTime(pid)
	return err == nil
}
