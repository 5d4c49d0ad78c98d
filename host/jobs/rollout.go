package jobs

import (
	"fmt"
	"time"

	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/host/supervisor"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// defaultUpdate is how a group without an update block rolls out: the old
// allocations stop only once the new ones are healthy (for a CSI plugin
// task, registered and probed healthy), as with Nomad's update block, but
// with min_healthy_time 1s rather than 10s so that a plain job updates
// about as soon as its new tasks run, while a task that dies at once is not
// mistaken for a healthy one. A new version that fails or is not healthy
// within 5 minutes is stopped and the old one keeps running.
var defaultUpdate = jobspec.UpdateStrategy{
	HealthCheck: jobspec.HealthCheckTaskStates, MinHealthyTime: time.Second, HealthyDeadline: 5 * time.Minute,
}

// UpdateOf is the update strategy a group rolls out with: its own, or
// defaultUpdate.
func UpdateOf(g *jobspec.TaskGroup) *jobspec.UpdateStrategy {
	if g != nil && g.Update != nil {
		return g.Update
	}
	return &defaultUpdate
}

// rollout is the verdict on a version's allocations.
type rollout struct {
	healthy   bool
	unhealthy string        // why the roll-out failed; "" if it has not
	wait      time.Duration // when to look again while undecided
}

// judgeRollout decides whether a version's allocations (one per slot, every
// slot filled) are healthy: each has every task running, its CSI plugin
// tasks' plugins healthy, for its group's min_healthy_time, within its
// healthy_deadline from creation. An allocation that failed, or missed its
// deadline, fails the roll-out. It reads snapshots only, so it is
// table-tested without processes.
func judgeRollout(job *jobspec.Job, snaps []*taskrunner.AllocSnapshot, now time.Time) rollout {
	var wait time.Duration
	allHealthy := true
	for _, snap := range snaps {
		al := snap.Alloc
		u := UpdateOf(job.Group(al.TaskGroup))
		if al.ClientStatus == state.AllocClientStatusFailed {
			return rollout{unhealthy: fmt.Sprintf("allocation %s failed", shortID(al.ID))}
		}
		if al.ClientStatus == state.AllocClientStatusComplete {
			continue
		}
		since, ok := healthySince(snap.Tasks, job, al.TaskGroup)
		if ok && now.Sub(since) >= u.MinHealthyTime {
			continue
		}
		allHealthy = false
		deadline := al.CreateTime.Add(u.HealthyDeadline)
		if !now.Before(deadline) {
			return rollout{unhealthy: fmt.Sprintf("allocation %s not healthy within healthy_deadline %s", shortID(al.ID), u.HealthyDeadline)}
		}
		next := deadline.Sub(now)
		if ok {
			next = min(next, since.Add(u.MinHealthyTime).Sub(now))
		}
		if wait == 0 || next < wait {
			wait = next
		}
	}
	if allHealthy {
		return rollout{healthy: true}
	}
	return rollout{wait: max(wait, 10*time.Millisecond)}
}

// healthySince is when every task of an allocation became healthy: running
// since its last start, and for plugin tasks (CSI or generic) since the
// plugin's last "healthy" event. ok is false while one is not healthy.
func healthySince(tasks []taskrunner.TaskSnapshot, job *jobspec.Job, group string) (time.Time, bool) {
	var since time.Time
	g := job.Group(group)
	for _, t := range tasks {
		if t.State.State != state.TaskStateRunning {
			return time.Time{}, false
		}
		at := t.State.StartedAt
		if isPluginTask(g, t.Name) {
			h, ok := pluginHealthyAt(t.Events)
			if !ok {
				return time.Time{}, false
			}
			if h.After(at) {
				at = h
			}
		}
		if at.After(since) {
			since = at
		}
	}
	return since, true
}

// pluginHealthyAt is the time of the supervisor's latest health event if it
// says healthy.
func pluginHealthyAt(events []*state.TaskEvent) (time.Time, bool) {
	for i := len(events) - 1; i >= 0; i-- {
		switch events[i].Type {
		case supervisor.EventPluginHealthy:
			return events[i].Time, true
		case supervisor.EventPluginUnhealthy, supervisor.EventPluginNotHealthy, taskrunner.EventStarted, taskrunner.EventRestarting, taskrunner.EventTerminated:
			return time.Time{}, false
		}
	}
	return time.Time{}, false
}

// isPluginTask reports whether the task is a supervised plugin (a CSI
// plugin or a generic one), whose health is its supervisor's events.
func isPluginTask(g *jobspec.TaskGroup, name string) bool {
	if g == nil {
		return false
	}
	for _, t := range g.Tasks {
		if t.Name == name {
			return t.CSIPluginConfig != nil || t.GenericPlugin() != nil
		}
	}
	return false
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
