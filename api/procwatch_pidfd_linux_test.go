package api

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"
)

// A process that is gone is refused: the watch could not tell its exit.
func TestWatchPidfdGone(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := watchPidfd(gone.Process.Pid); !errors.Is(err, errProcessGone) {
		t.Fatalf("watch of a process that is gone: %v, want errProcessGone", err)
	}
}

// A pidfd watch returns when the process exits.
func TestWatchPidfdSeesExit(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	w, err := watchPidfd(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- w.wait(context.Background()) }()
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("wait: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("wait did not return after the process exited")
	}
}
