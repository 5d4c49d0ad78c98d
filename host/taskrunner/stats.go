package taskrunner

import (
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/pluginhost/pluginhost/host/cgroup"
)

// statsWindow is the shortest span a CPU percentage is computed over. The
// API and every metrics scrape both sample a task; without a floor, a
// scrape right after an `alloc status -stats` would divide a few
// microseconds of CPU time by a few microseconds of wall time. Nomad's
// client samples on its collection_interval, 1 s by default.
const statsWindow = time.Second

// TaskStats is one sample of a running task's cgroup: memory in bytes and
// cumulative CPU times (cgroup.Stats), and the CPU used since an earlier
// sample as a percentage of one core, as Nomad's client.allocs.cpu.*
// gauges and alloc status show it.
type TaskStats struct {
	cgroup.Stats
	// CPUPercent, CPUUserPercent and CPUSystemPercent cover at least
	// statsWindow, or the whole launch when it is younger than that or
	// this is its first sample.
	CPUPercent, CPUUserPercent, CPUSystemPercent float64
}

// statsSampler keeps the samples a task's CPU percentages are computed
// from: one launch's group, its two latest reference samples.
type statsSampler struct {
	mu sync.Mutex
	// group is the launch the references belong to; a new launch (a new
	// group, counters from zero) starts over.
	group *taskCgroup
	// older and newer are reference samples, newer at least statsWindow
	// after older once there are two (both are the launch's zero before
	// that). A sample is compared with newer when that is at least
	// statsWindow old, else with older: the span is never under a window
	// (but for a launch younger than that), and a task sampled at least
	// once a window gets spans of one to two windows. After a long quiet
	// spell the span is the time since the previous sample, as Nomad's.
	older, newer cgroup.Stats
}

// Stats samples the task's cgroup. It returns nil, and no error, when the
// task is not running or runs without a cgroup (cgroups disabled). It is
// safe for concurrent use: callers (the API, metrics scrapes) share the
// reference samples.
func (tr *TaskRunner) Stats() (*TaskStats, error) {
	tr.mu.Lock()
	running, g, started := tr.running, tr.cgroup, tr.st.StartedAt
	tr.mu.Unlock()
	if running == nil || g == nil {
		return nil, nil
	}
	sp := &tr.sampler
	// Held across the read so that samples are taken and compared in
	// order: a reference never moves back in time.
	sp.mu.Lock()
	defer sp.mu.Unlock()
	cur, err := g.Stats()
	if errors.Is(err, fs.ErrNotExist) {
		// The launch ended between the check above and the read; the
		// group went with it.
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", tr.task.Name, err)
	}
	out := &TaskStats{Stats: cur}
	out.CPUPercent, out.CPUUserPercent, out.CPUSystemPercent = sp.percent(g, started, cur)
	return out, nil
}

// percent is the CPU used up to cur, from the reference it picks (see
// older and newer), and moves the references on; sp.mu is held.
func (sp *statsSampler) percent(g *taskCgroup, started time.Time, cur cgroup.Stats) (total, user, system float64) {
	if sp.group != g {
		// The group's counters start at zero when the launch is made,
		// just before StartedAt: the first percentage is the launch's
		// average. A re-adopted task keeps its StartedAt and its group.
		if started.IsZero() || started.After(cur.Time) {
			started = cur.Time
		}
		zero := cgroup.Stats{Time: started}
		sp.group, sp.older, sp.newer = g, zero, zero
	}
	ref := sp.older
	rotate := cur.Time.Sub(sp.newer.Time) >= statsWindow
	if rotate {
		ref = sp.newer
	}
	total, user, system = cgroup.CPUPercent(ref, cur)
	if rotate {
		sp.older, sp.newer = sp.newer, cur
	}
	return total, user, system
}

// TaskGroup is the name of the allocation's task group.
func (ar *AllocRunner) TaskGroup() string { return ar.group.Name }

// Stats samples every task of the allocation that is running in a cgroup,
// by task name; tasks that are not are left out. A task whose sample
// failed is left out too and named in the error, so that one unreadable
// group does not hide its siblings.
func (ar *AllocRunner) Stats() (map[string]*TaskStats, error) {
	out := make(map[string]*TaskStats, len(ar.tasks))
	var errs []error
	for _, tr := range ar.tasks {
		s, err := tr.Stats()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if s != nil {
			out[tr.task.Name] = s
		}
	}
	if err := errors.Join(errs...); err != nil {
		return out, fmt.Errorf("allocation %s: %w", ar.id, err)
	}
	return out, nil
}
