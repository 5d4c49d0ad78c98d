package main

import (
	"context"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// exitRecorder stands in for os.Exit.
type exitRecorder struct{ codes []int }

func (e *exitRecorder) exit(code int) { e.codes = append(e.codes, code) }

func TestFaultProbeFail(t *testing.T) {
	f := newFaults(faultConfig{ProbeFail: true}, nil)
	_, err := f.probe(context.Background())
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("probe = %v, want FAILED_PRECONDITION", err)
	}
	if ready, err := newFaults(faultConfig{}, nil).probe(context.Background()); err != nil || !ready {
		t.Fatalf("healthy probe = %t, %v; want ready", ready, err)
	}
}

func TestFaultProbeDelay(t *testing.T) {
	const delay = 50 * time.Millisecond
	f := newFaults(faultConfig{ProbeDelay: delay}, nil)
	start := time.Now()
	if _, err := f.probe(context.Background()); err != nil {
		t.Fatalf("probe: %v", err)
	}
	if took := time.Since(start); took < delay {
		t.Fatalf("probe took %s, want >= %s", took, delay)
	}
	// The caller's deadline wins over the injected delay.
	f = newFaults(faultConfig{ProbeDelay: time.Hour}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := f.probe(ctx); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("probe past deadline = %v, want DEADLINE_EXCEEDED", err)
	}
}

func TestFaultNotReadyFor(t *testing.T) {
	f := newFaults(faultConfig{NotReadyFor: time.Minute}, nil)
	now := f.started
	f.now = func() time.Time { return now }
	if ready, err := f.probe(context.Background()); err != nil || ready {
		t.Fatalf("probe at start = %t, %v; want ready=false", ready, err)
	}
	now = f.started.Add(time.Minute)
	if ready, err := f.probe(context.Background()); err != nil || !ready {
		t.Fatalf("probe after a minute = %t, %v; want ready=true", ready, err)
	}
}

func TestFaultLatency(t *testing.T) {
	const latency = 30 * time.Millisecond
	f := newFaults(faultConfig{Latency: latency}, nil)
	start := time.Now()
	if err := f.enter(context.Background()); err != nil {
		t.Fatalf("enter: %v", err)
	}
	if took := time.Since(start); took < latency {
		t.Fatalf("enter took %s, want >= %s", took, latency)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := newFaults(faultConfig{Latency: time.Hour}, nil).enter(ctx); status.Code(err) != codes.Canceled {
		t.Fatalf("enter on a cancelled context = %v, want CANCELED", err)
	}
}

func TestFaultCrashAfter(t *testing.T) {
	rec := &exitRecorder{}
	f := newFaults(faultConfig{CrashAfter: 3}, rec.exit)
	for i := range 3 {
		if err := f.enter(context.Background()); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	if len(rec.codes) != 0 {
		t.Fatalf("exited after %d calls, want only after the 4th", 3)
	}
	if err := f.enter(context.Background()); status.Code(err) != codes.Unavailable {
		t.Fatalf("4th call = %v, want UNAVAILABLE", err)
	}
	if len(rec.codes) != 1 || rec.codes[0] != crashExitCode {
		t.Fatalf("exit calls = %v, want [%d]", rec.codes, crashExitCode)
	}
}

func TestFaultExitAtStart(t *testing.T) {
	rec := &exitRecorder{}
	if newFaults(faultConfig{}, rec.exit).exitAtStart() {
		t.Fatalf("exited without being asked to")
	}
	code := 0 // exiting 0 at start is a valid request too
	if !newFaults(faultConfig{ExitAtStart: &code}, rec.exit).exitAtStart() || len(rec.codes) != 1 || rec.codes[0] != 0 {
		t.Fatalf("exit calls = %v, want [0]", rec.codes)
	}
}

// TestFaultsThroughGRPC checks that the faults reach real RPCs: a failing
// Probe over the socket, and every RPC counted towards CrashAfter.
func TestFaultsThroughGRPC(t *testing.T) {
	opts := testOptions(shortTempDir(t))
	opts.Faults = faultConfig{ProbeFail: true}
	_, p := startDriver(t, opts)
	if _, err := p.Identity.Probe(context.Background(), &csi.ProbeRequest{}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("Probe = %v, want FAILED_PRECONDITION", err)
	}
	if _, err := p.Identity.GetPluginInfo(context.Background(), &csi.GetPluginInfoRequest{}); err != nil {
		t.Fatalf("GetPluginInfo with a failing probe: %v", err)
	}
}
