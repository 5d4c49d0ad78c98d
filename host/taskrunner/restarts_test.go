package taskrunner

import (
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/host/jobspec"
)

func noJitter(int64) int64 { return 0 }

// TestDelayIsConstant: Nomad's restart delay is the same at every attempt
// (it used to double here, which a job must not do on one and not on the
// other).
func TestDelayIsConstant(t *testing.T) {
	p := &jobspec.RestartPolicy{Attempts: 1000, Interval: time.Hour, Delay: time.Second, Mode: jobspec.RestartModeFail}
	rt := newRestartTracker(p, false, noJitter)
	now := time.Now()
	for i := range 300 {
		if d := rt.next(now, false); !d.restart || d.delay != time.Second {
			t.Fatalf("attempt %d: %+v, want restart after 1s", i, d)
		}
	}
}

func TestBackoffJitterBounded(t *testing.T) {
	p := &jobspec.RestartPolicy{Attempts: 5, Interval: time.Hour, Delay: 100 * time.Millisecond, Mode: jobspec.RestartModeFail}
	maxJitter := func(n int64) int64 { return n - 1 }
	rt := newRestartTracker(p, false, maxJitter)
	d := rt.next(time.Now(), false)
	if d.delay < 100*time.Millisecond || d.delay > 125*time.Millisecond {
		t.Fatalf("delay %s outside [100ms, 125ms]", d.delay)
	}
}

func TestRestartModes(t *testing.T) {
	now := time.Now()
	fail := newRestartTracker(&jobspec.RestartPolicy{Attempts: 2, Interval: time.Minute, Delay: time.Millisecond, Mode: jobspec.RestartModeFail}, false, noJitter)
	fail.next(now, false)
	fail.next(now, false)
	if d := fail.next(now, false); d.restart || !d.failed {
		t.Fatalf("third exit in fail mode: %+v, want failed", d)
	}
	// A new interval starts a new window.
	if d := fail.next(now.Add(2*time.Minute), false); !d.restart {
		t.Fatalf("exit in a new interval: %+v, want restart", d)
	}

	delay := newRestartTracker(&jobspec.RestartPolicy{Attempts: 1, Interval: time.Minute, Delay: time.Millisecond, Mode: jobspec.RestartModeDelay}, false, noJitter)
	delay.next(now, false)
	d := delay.next(now.Add(10*time.Second), false)
	if !d.restart || d.delay != 50*time.Second {
		t.Fatalf("delay mode past attempts: %+v, want restart at the interval's end (50s)", d)
	}

	batch := newRestartTracker(nil, true, noJitter)
	if d := batch.next(now, true); d.restart || d.failed {
		t.Fatalf("successful batch exit: %+v, want completion", d)
	}
}
