package taskrunner

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/pluginhost/pluginhost/host/jobspec"
)

// restartTracker decides whether and when a task restarts, as Nomad's
// client does (client/allocrunner/taskrunner/restarts/restarts.go):
//
//   - the interval starts when the task runner starts (Nomad's
//     NewRestartTracker sets startTime to now), not at the first exit, so
//     a task that ran for a while before failing has less of its first
//     interval left;
//   - every exit counts; an exit after the interval's end starts a new
//     interval at that exit (count 0, start = now);
//   - past Attempts within the interval, mode "fail" fails the task and
//     mode "delay" waits until the interval ends (its start + Interval);
//   - otherwise it waits Delay plus a random jitter of up to 25% of it, the
//     same at every attempt (exponential delays belong to Nomad's
//     reschedule block, which pluginhost does not have).
//
// The reasons are Nomad's RestartReason texts, so events read the same.
type restartTracker struct {
	policy jobspec.RestartPolicy
	batch  bool
	rnd    func(n int64) int64

	start time.Time
	count int
}

// Nomad's restart reasons (restarts.go).
const (
	reasonNoRestartsAllowed = "Policy allows no restarts"
	reasonWithinPolicy      = "Restart within policy"
	reasonDelay             = "Exceeded allowed attempts, applying a delay"
)

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

// begin starts the first interval: the task runner calls it when it
// starts (after an agent restart too, as Nomad's client builds a new
// tracker for a restored task).
func (t *restartTracker) begin(now time.Time) {
	t.start, t.count = now, 0
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
	if t.start.IsZero() {
		// A caller that never called begin: the first exit opens the
		// interval (the old behaviour; only tests do this).
		t.begin(now)
	}
	if t.policy.Attempts == 0 {
		if t.batch && success {
			return decision{reason: "batch task completed"}
		}
		return decision{failed: true, reason: reasonNoRestartsAllowed}
	}
	end := t.start.Add(t.policy.Interval)
	if now.After(end) {
		t.start, t.count = now, 0
		end = now.Add(t.policy.Interval)
	}
	t.count++
	if t.batch && success {
		return decision{reason: "batch task completed"}
	}
	if t.count > t.policy.Attempts {
		if t.policy.Mode == jobspec.RestartModeFail {
			return decision{failed: true, reason: fmt.Sprintf("Exceeded allowed attempts %d in interval %v and mode is %q",
				t.policy.Attempts, t.policy.Interval, jobspec.RestartModeFail)}
		}
		return decision{restart: true, delay: end.Sub(now), reason: reasonDelay}
	}
	return decision{restart: true, delay: t.delay(), reason: reasonWithinPolicy}
}

// delay is Delay plus up to 25% jitter.
func (t *restartTracker) delay() time.Duration {
	d := t.policy.Delay
	if d <= 0 {
		return 0
	}
	return d + time.Duration(t.rnd(int64(d)/4+1))
}
