package taskrunner

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/pluginhost/pluginhost/host/jobspec"
)

// restartTracker decides whether and when a task restarts, as Nomad's
// client does (its restarts.go): attempts are counted within Interval from
// the first restart of the window; every restart waits Delay plus a random
// jitter of up to 25% of it, the same at every attempt (exponential delays
// belong to Nomad's reschedule block, which pluginhost does not have: a job
// must mean the same here and there); past Attempts, mode "fail" fails the
// task and mode "delay" waits for the interval to end.
type restartTracker struct {
	policy jobspec.RestartPolicy
	batch  bool
	rnd    func(n int64) int64

	windowStart time.Time
	count       int
}

func newRestartTracker(p *jobspec.RestartPolicy, batch bool, rnd func(int64) int64) *restartTracker {
	pol := jobspec.RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: jobspec.RestartModeFail}
	if p != nil {
		pol = *p
	}
	if rnd == nil {
		rnd = rand.Int64N
	}
	return &restartTracker{policy: pol, batch: batch, rnd: rnd}
}

// decision is the tracker's answer.
type decision struct {
	restart bool
	delay   time.Duration
	reason  string
	failed  bool
}

// next is called after each exit. success is a clean exit (code 0).
func (t *restartTracker) next(now time.Time, success bool) decision {
	if t.batch && success {
		return decision{reason: "batch task completed"}
	}
	if t.windowStart.IsZero() || now.Sub(t.windowStart) > t.policy.Interval {
		t.windowStart, t.count = now, 0
	}
	if t.count >= t.policy.Attempts {
		if t.policy.Mode == jobspec.RestartModeFail {
			return decision{failed: true, reason: fmt.Sprintf("exceeded %d restart attempts in %s", t.policy.Attempts, t.policy.Interval)}
		}
		// delay mode: wait for the window to end, then start a new one.
		wait := t.policy.Interval - now.Sub(t.windowStart)
		t.windowStart, t.count = now.Add(wait), 1
		return decision{restart: true, delay: wait, reason: fmt.Sprintf("exceeded %d attempts in %s; waiting for the interval to end", t.policy.Attempts, t.policy.Interval)}
	}
	d := t.delay()
	t.count++
	return decision{restart: true, delay: d, reason: fmt.Sprintf("restart %d of %d within %s", t.count, t.policy.Attempts, t.policy.Interval)}
}

// delay is Delay plus up to 25% jitter.
func (t *restartTracker) delay() time.Duration {
	d := t.policy.Delay
	if d <= 0 {
		return 0
	}
	return d + time.Duration(t.rnd(int64(d)/4+1))
}
