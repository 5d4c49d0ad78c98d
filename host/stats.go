package host

import (
	"context"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/apiconv"
	"github.com/pluginhost/pluginhost/host/jobs"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// runnerStats are r's tasks' stats; the reconciler's runners are the
// agent's task runners, which have them.
func runnerStats(r jobs.Runner) (map[string]*taskrunner.TaskStats, error) {
	ar, ok := r.(*taskrunner.AllocRunner)
	if !ok {
		return nil, nil
	}
	return ar.Stats()
}

// AllocStats implements apiserver.Backend: a sample of the cgroup of every
// running task of the allocation.
func (a *Agent) AllocStats(_ context.Context, id string) (*api.AllocResourceUsage, error) {
	r, err := lookupAlloc(a.jobs, id)
	if err != nil {
		return nil, err
	}
	samples, err := runnerStats(r)
	if err != nil {
		// One unreadable group must not hide the others' figures.
		a.logger.Warn("reading task stats", "alloc_id", r.ID(), "error", err)
	}
	return apiconv.AllocResourceUsage(samples, a.cpu), nil
}
