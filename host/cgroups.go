package host

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/host/cgroup"
	"github.com/pluginhost/pluginhost/host/state"
)

// sweepCgroups removes the task cgroups no restored task owns: what a
// crash left between making a launch's group and recording its handle, or
// between a task's end and the removal of its group, and the groups of
// allocations that could not be restored (no runner would ever end them).
// Their processes are killed first: nothing the agent does not know of may
// keep running in its name. Groups of restored tasks are left to their
// runners, which re-adopt them or end them.
func sweepCgroups(m *cgroup.Manager, stored []*state.AllocState, logger hclog.Logger) {
	if m == nil || !m.Enabled() {
		return
	}
	owned := map[string]bool{}
	for _, as := range stored {
		for _, tr := range as.Tasks {
			if tr.Handle != nil && tr.Handle.CgroupPath != "" {
				owned[tr.Handle.CgroupPath] = true
			}
		}
	}
	paths, err := m.Leftovers()
	if err != nil {
		logger.Warn("listing leftover task cgroups", "error", err)
		return
	}
	for _, p := range paths {
		if owned[p] {
			continue
		}
		g, err := m.Open(p)
		if err != nil {
			logger.Warn("opening a leftover task cgroup", "cgroup", p, "error", err)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = g.Kill(ctx)
		cancel()
		if err == nil {
			err = g.Destroy()
		}
		if err != nil {
			logger.Warn("removing a leftover task cgroup", "cgroup", p, "error", err)
			continue
		}
		logger.Info("removed a leftover task cgroup", "cgroup", p)
	}
}
