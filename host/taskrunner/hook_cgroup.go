package taskrunner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/pluginhost/pluginhost/host/cgroup"
	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/host/jobspec"
)

// cgroupKillTimeout bounds the kill of what is left in a task's group
// after the task ended; a group that does not empty in that time is left
// for the next launch or the agent's start-up sweep.
const cgroupKillTimeout = 10 * time.Second

// cgroupHook gives every launch of a task a control group of its own,
// with the task's resources as its limits, and takes it away when the
// launch ends: whatever the task left running (a child that called setsid,
// a double fork) is killed with it. One group per launch means the group's
// OOM counter speaks of this launch only.
type cgroupHook struct{ cfg *Config }

func (h *cgroupHook) Name() string { return "cgroup" }

func (h *cgroupHook) Prestart(ctx context.Context, req *HookRequest) error {
	req.Cgroup = nil
	m := h.cfg.Cgroups
	if m == nil || !m.Enabled() {
		return nil
	}
	g, err := m.Create(CgroupName(req.AllocID, req.Task.Name), limits(req.Task.Resources, h.cfg.PidsLimit))
	if err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	// A group left by a launch whose end the agent did not see (it was
	// down) may still hold processes: they are not this launch's. A
	// group made just now holds none (and listing five hierarchies costs
	// a quarter of a millisecond on the launch path).
	if !g.Fresh() {
		if pids, err := g.Pids(); err == nil && len(pids) > 0 {
			if err := g.Kill(ctx); err != nil {
				return fmt.Errorf("cgroup: clearing the previous launch's processes: %w", err)
			}
		}
	}
	req.Cgroup = &taskCgroup{g}
	return nil
}

// Exited ends the launch's group: every process in it is killed, then it
// is removed.
func (h *cgroupHook) Exited(_ context.Context, req *HookRequest, _ *driver.ExitResult) error {
	return h.end(req)
}

// Stop covers a task that ends without an exit of its own being seen (a
// restored task that died while the agent was down, a kill).
func (h *cgroupHook) Stop(_ context.Context, req *HookRequest) error {
	return h.end(req)
}

func (h *cgroupHook) end(req *HookRequest) error {
	g := req.Cgroup
	if g == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), cgroupKillTimeout)
	defer cancel()
	if err := g.Kill(ctx); err != nil {
		return fmt.Errorf("cgroup %s: %w", g.Path(), err)
	}
	if err := g.Destroy(); err != nil {
		return fmt.Errorf("cgroup %s: %w", g.Path(), err)
	}
	req.Cgroup = nil
	return nil
}

// CgroupName is the name of a task's group under the agent's parent.
func CgroupName(allocID, task string) string { return allocID + "." + task }

// limits are a launch's: the job's resources and the agent's pids limit,
// which no job can change.
func limits(r *jobspec.Resources, pids int) cgroup.Limits {
	l := cgroup.Limits{PidsLimit: pids}
	if r != nil {
		l.MemoryMB, l.MemoryMaxMB, l.CPU = r.MemoryMB, r.MemoryMaxMB, r.CPU
	}
	return l
}

// openCgroup finds a restored task's group by its recorded path; nil when
// it has none or the group is gone.
func openCgroup(m *cgroup.Manager, path string) (*taskCgroup, error) {
	if m == nil || !m.Enabled() || path == "" {
		return nil, nil
	}
	g, err := m.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &taskCgroup{g}, nil
}

// taskCgroup is a cgroup.Group as the drivers use it.
type taskCgroup struct{ *cgroup.Group }

// CloneFD implements driver.Cgroup: v2 has a directory to clone into,
// v1 has none.
func (g *taskCgroup) CloneFD() (int, bool, error) {
	fd, err := g.FD()
	if errors.Is(err, errors.ErrUnsupported) {
		return -1, false, nil
	}
	return fd, err == nil, err
}
