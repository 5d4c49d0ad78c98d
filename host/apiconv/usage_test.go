package apiconv

import (
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/cgroup"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// A task's process count and limit reach the API as PidsStats, only where
// they were measured; the allocation adds them up, and one task without a
// limit leaves the allocation without one.
func TestAllocResourceUsagePids(t *testing.T) {
	sample := func(cur, limit uint64, measured bool) *taskrunner.TaskStats {
		return &taskrunner.TaskStats{Stats: cgroup.Stats{Time: time.Unix(1, 0),
			PidsCurrent: cur, PidsLimit: limit, PidsMeasured: measured}}
	}
	for _, c := range []struct {
		name    string
		samples map[string]*taskrunner.TaskStats
		tasks   map[string]*api.PidsStats
		sum     *api.PidsStats
	}{
		{"limited", map[string]*taskrunner.TaskStats{"a": sample(3, 2048, true), "b": sample(10, 64, true)},
			map[string]*api.PidsStats{"a": {Current: 3, Limit: 2048}, "b": {Current: 10, Limit: 64}},
			&api.PidsStats{Current: 13, Limit: 2112}},
		{"one unlimited", map[string]*taskrunner.TaskStats{"a": sample(3, 2048, true), "b": sample(10, 0, true)},
			map[string]*api.PidsStats{"a": {Current: 3, Limit: 2048}, "b": {Current: 10}},
			&api.PidsStats{Current: 13}},
		{"no pids controller", map[string]*taskrunner.TaskStats{"a": sample(0, 0, false)},
			map[string]*api.PidsStats{"a": nil}, nil},
	} {
		u := AllocResourceUsage(c.samples, cgroup.Machine{})
		for task, want := range c.tasks {
			got := u.Tasks[task].ResourceUsage.PidsStats
			if (got == nil) != (want == nil) || got != nil && *got != *want {
				t.Errorf("%s: task %s PidsStats %+v, want %+v", c.name, task, got, want)
			}
		}
		got := u.ResourceUsage.PidsStats
		if (got == nil) != (c.sum == nil) || got != nil && *got != *c.sum {
			t.Errorf("%s: allocation PidsStats %+v, want %+v", c.name, got, c.sum)
		}
	}
}
