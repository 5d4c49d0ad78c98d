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
	rt.begin(now)
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
	rt.begin(time.Now())
	d := rt.next(time.Now(), false)
	if d.delay < 100*time.Millisecond || d.delay > 125*time.Millisecond {
		t.Fatalf("delay %s outside [100ms, 125ms]", d.delay)
	}
}

// TestRestartTiming replays exits against Nomad's rules
// (client/allocrunner/taskrunner/restarts/restarts.go): the interval starts
// when the task runner starts, every exit counts, an exit past the
// interval's end opens a new interval at that exit, and past attempts mode
// "delay" waits for the interval's end. Offsets are from the task runner's
// start.
func TestRestartTiming(t *testing.T) {
	s := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	type want struct {
		restart, failed bool
		delay           time.Duration
		reason          string
	}
	restartIn := func(d time.Duration) want { return want{restart: true, delay: d, reason: reasonWithinPolicy} }
	waitFor := func(d time.Duration) want { return want{restart: true, delay: d, reason: reasonDelay} }
	failed := func(reason string) want { return want{failed: true, reason: reason} }
	cases := []struct {
		name   string
		policy jobspec.RestartPolicy
		batch  bool
		exits  []time.Duration
		ok     []bool // exit 0 at the same index; nil = all failures
		want   []want
	}{{
		// The run: the first failure 12 s after the start, the
		// fourth at 35 s. Nomad waited 300-35 = 265 s; counting the
		// interval from the first failure waited 300-23 = 277 s.
		name:   "fourth failure in delay mode",
		policy: jobspec.RestartPolicy{Attempts: 3, Interval: 5 * time.Minute, Delay: 5 * time.Second, Mode: jobspec.RestartModeDelay},
		exits:  []time.Duration{s(12), s(19.5), s(27), s(35)},
		want:   []want{restartIn(s(5)), restartIn(s(5)), restartIn(s(5)), waitFor(s(265))},
	}, {
		// After the wait, the next exit is past the interval's end: a new
		// interval starts at that exit, with a full set of attempts.
		name:   "delay mode starts a new interval at the next exit",
		policy: jobspec.RestartPolicy{Attempts: 1, Interval: time.Minute, Delay: time.Second, Mode: jobspec.RestartModeDelay},
		exits:  []time.Duration{s(50), s(55), s(61), s(62), s(125)},
		want:   []want{restartIn(s(1)), waitFor(s(5)), restartIn(s(1)), waitFor(s(59)), restartIn(s(1))},
	}, {
		name:   "fail mode within the interval",
		policy: jobspec.RestartPolicy{Attempts: 2, Interval: time.Minute, Delay: time.Second, Mode: jobspec.RestartModeFail},
		exits:  []time.Duration{s(10), s(20), s(30)},
		want: []want{restartIn(s(1)), restartIn(s(1)),
			failed(`Exceeded allowed attempts 2 in interval 1m0s and mode is "fail"`)},
	}, {
		// Counted from the first failure (40 s) the third exit would be
		// within the interval and fail the task; from the start it is not.
		name:   "fail mode: the interval is the task runner's",
		policy: jobspec.RestartPolicy{Attempts: 2, Interval: time.Minute, Delay: time.Second, Mode: jobspec.RestartModeFail},
		exits:  []time.Duration{s(40), s(50), s(65)},
		want:   []want{restartIn(s(1)), restartIn(s(1)), restartIn(s(1))},
	}, {
		name:   "exactly at the interval's end is still inside",
		policy: jobspec.RestartPolicy{Attempts: 1, Interval: time.Minute, Delay: time.Second, Mode: jobspec.RestartModeDelay},
		exits:  []time.Duration{s(30), s(60)},
		want:   []want{restartIn(s(1)), waitFor(0)},
	}, {
		name:   "zero attempts",
		policy: jobspec.RestartPolicy{Attempts: 0, Interval: time.Minute, Delay: time.Second, Mode: jobspec.RestartModeFail},
		exits:  []time.Duration{s(1)},
		want:   []want{failed(reasonNoRestartsAllowed)},
	}, {
		name:   "service tasks restart after exit 0 too, and it counts",
		policy: jobspec.RestartPolicy{Attempts: 1, Interval: time.Minute, Delay: time.Second, Mode: jobspec.RestartModeFail},
		exits:  []time.Duration{s(1), s(3)},
		ok:     []bool{true, true},
		want:   []want{restartIn(s(1)), failed(`Exceeded allowed attempts 1 in interval 1m0s and mode is "fail"`)},
	}, {
		name:   "batch success completes",
		policy: jobspec.RestartPolicy{Attempts: 3, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: jobspec.RestartModeFail},
		batch:  true,
		exits:  []time.Duration{s(5), s(30)},
		ok:     []bool{false, true},
		want:   []want{restartIn(s(15)), {reason: "batch task completed"}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.policy
			rt := newRestartTracker(&p, tc.batch, noJitter)
			start := time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC)
			rt.begin(start)
			for i, off := range tc.exits {
				success := tc.ok != nil && tc.ok[i]
				d := rt.next(start.Add(off), success)
				got := want{restart: d.restart, failed: d.failed, delay: d.delay, reason: d.reason}
				if got != tc.want[i] {
					t.Fatalf("exit %d at +%s: got %+v, want %+v", i+1, off, got, tc.want[i])
				}
			}
		})
	}
}

func TestRestartingMessage(t *testing.T) {
	for _, tc := range []struct {
		d    decision
		want string
	}{
		{decision{restart: true, delay: 15200 * time.Millisecond, reason: reasonWithinPolicy}, "Task restarting in 15.2s"},
		{decision{restart: true, delay: 265 * time.Second, reason: reasonDelay}, "Exceeded allowed attempts, applying a delay - Task restarting in 4m25s"},
	} {
		if got := restartingMessage(tc.d); got != tc.want {
			t.Errorf("restartingMessage(%+v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
