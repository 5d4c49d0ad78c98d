//go:build unix

package api

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// kill(pid, 0)'s answers: EPERM is a process of another user, alive; only
// ESRCH is an exit; anything else is an error, not a guess.
func TestPidExists(t *testing.T) {
	for _, tc := range []struct {
		err       error
		exists    bool
		wantError bool
	}{
		{err: nil, exists: true},
		{err: unix.EPERM, exists: true},
		{err: unix.ESRCH, exists: false},
		{err: unix.EINVAL, wantError: true},
	} {
		got, err := existsFromKill(7, tc.err)
		if got != tc.exists || (err != nil) != tc.wantError {
			t.Errorf("kill(7, 0) = %v: exists %v, %v; want %v, error %v", tc.err, got, err, tc.exists, tc.wantError)
		}
		if tc.wantError && !errors.Is(err, tc.err) {
			t.Errorf("kill(7, 0) = %v: error %v does not wrap it", tc.err, err)
		}
	}
	if ok, err := pidExists(os.Getpid()); !ok || err != nil {
		t.Errorf("pidExists(self) = %v, %v", ok, err)
	}
	reaped := exec.Command("true")
	if err := reaped.Run(); err != nil {
		t.Fatal(err)
	}
	if ok, err := pidExists(reaped.Process.Pid); ok || err != nil {
		t.Errorf("pidExists(reaped child) = %v, %v; want false", ok, err)
	}
}

// fakeProcess exists until its exit is set; every question is counted.
type fakeProcess struct {
	exited atomic.Bool
	err    atomic.Pointer[error]
	asked  atomic.Int64
}

func (p *fakeProcess) exists(int) (bool, error) {
	p.asked.Add(1)
	if e := p.err.Load(); e != nil {
		return false, *e
	}
	return !p.exited.Load(), nil
}

// The poll watch waits while the process exists, sees its exit within an
// interval or two, reports a failed question as an error, and stops at
// ctx's end.
func TestPollWatch(t *testing.T) {
	const interval = 5 * time.Millisecond
	p := &fakeProcess{}
	p.exited.Store(true)
	if _, err := watchPoll(42, interval, p.exists); !errors.Is(err, errProcessGone) {
		t.Fatalf("watch of a process that is gone: %v", err)
	}

	p = &fakeProcess{}
	w, err := watchPoll(42, interval, p.exists)
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- w.wait(context.Background()) }()
	// Five questions, all answered "exists": wait must still be waiting.
	for deadline := time.Now().Add(2 * time.Second); p.asked.Load() < 5; time.Sleep(interval) {
		select {
		case err := <-waited:
			t.Fatalf("wait returned (%v) while the process exists", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("asked %d times in 2 s at an interval of %v", p.asked.Load(), interval)
		}
	}
	select {
	case err := <-waited:
		t.Fatalf("wait returned (%v) while the process exists", err)
	default:
	}
	p.exited.Store(true)
	exitSeen := time.Now()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("wait: %v", err)
		}
		t.Logf("exit seen after %v (interval %v)", time.Since(exitSeen), interval)
	case <-time.After(2 * time.Second):
		t.Fatal("wait did not return after the process exited")
	}

	p = &fakeProcess{}
	w, _ = watchPoll(42, interval, p.exists)
	var broken error = unix.EINVAL
	go func() { waited <- w.wait(context.Background()) }()
	p.err.Store(&broken)
	if err := <-waited; !errors.Is(err, broken) {
		t.Fatalf("wait after a failed question: %v, want %v", err, broken)
	}

	p = &fakeProcess{}
	w, _ = watchPoll(42, time.Hour, p.exists)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { waited <- w.wait(ctx) }()
	cancel()
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Fatalf("wait after ctx's end: %v", err)
	}
}
