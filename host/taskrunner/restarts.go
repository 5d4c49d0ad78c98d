package taskrunner

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/pluginhost/pluginhost/host/jobspec"
)

// maxBackoffShift caps the exponent, not only the result: 1<<shift must not
// overflow whatever the number of attempts (swarmkit's hot loop at 37).
const maxBackoffShift = 16

// restartTracker decides whether and when a task restarts. Attempts are
// counted within Interval from the first restart of the window, as in
// Nomad; the delay doubles with each attempt of the window up to MaxDelay,
// plus up to 25% jitter.
type restartTracker struct {
	policy   jobspec.RestartPolicy
	batch    bool
	maxDelay time.Duration
	rnd      func(n int64) int64

	windowStart time.Time
	count       int
}

func newRestartTracker(p *jobspec.RestartPolicy, batch bool, maxDelay time.Duration, rnd func(int64) int64) *restartTracker {
	pol := jobspec.RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: jobspec.RestartModeFail}
	if p != nil {
		pol = *p
	}
	if rnd == nil {
		rnd = rand.Int64N
	}
	if maxDelay < pol.Delay {
		maxDelay = pol.Delay
	}
	return &restartTracker{policy: pol, batch: batch, maxDelay: maxDelay, rnd: rnd}
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
	d := t.backoff(t.count)
	t.count++
	return decision{restart: true, delay: d, reason: fmt.Sprintf("restart %d of %d within %s", t.count, t.policy.Attempts, t.policy.Interval)}
}

func (t *restartTracker) backoff(n int) time.Duration {
	base := t.policy.Delay
	if base <= 0 {
		return 0
	}
	d := t.maxDelay
	if shift := min(n, maxBackoffShift); base <= t.maxDelay>>shift {
		d = base << shift
	}
	return d + time.Duration(t.rnd(int64(d)/4+1))
}
