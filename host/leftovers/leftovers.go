package leftovers

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/host/cgroup"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// Cgroups removes the task cgroups of the agent's own allocations
// that no restored task owns: what a crash left between making a launch's
// group and recording its handle, or between a task's end and the removal
// of its group, and the groups of allocations that could not be restored
// (no runner would ever end them). Their processes are killed first:
// nothing may keep running in the agent's name that it does not know of.
// Groups of restored tasks are left to their runners, which re-adopt them
// or end them. A group of an allocation the agent has no record of is
// left alone, whatever parent it is under: it is not this agent's (another
// agent configured with the same cgroup_parent), and killing it is how
// two agents on one machine used to kill each other's tasks.
func Cgroups(m *cgroup.Manager, all, restored []*state.AllocState, logger hclog.Logger) {
	if m == nil || !m.Enabled() {
		return
	}
	mine := map[string]bool{}
	for _, as := range all {
		if as != nil && as.Alloc != nil {
			mine[as.Alloc.ID] = true
		}
	}
	owned := map[string]bool{}
	for _, as := range restored {
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
		allocID, _, _ := strings.Cut(path.Base(p), ".")
		if !mine[allocID] {
			logger.Debug("left a task cgroup of an allocation this agent has no record of", "cgroup", p)
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

// SocketDirs removes the socket directories a killed agent left for
// allocations it no longer has (purged or collected while their sockets
// could not be removed, or never recorded): under the socket root, an
// allocation directory this agent has no record of loses its dead sockets
// and, once empty, itself. A socket something still listens on keeps its
// directory: an operator may have given two agents one socket_dir, and
// the other's live plugins are not this agent's to touch.
func SocketDirs(root string, stored []*state.AllocState, logger hclog.Logger) {
	mine := map[string]bool{}
	for _, as := range stored {
		if as != nil && as.Alloc != nil {
			mine[as.Alloc.ID] = true
		}
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || mine[e.Name()] || taskrunner.CheckPathElem("allocation ID", e.Name()) != nil {
			continue
		}
		dir := filepath.Join(root, e.Name())
		tasks, _ := os.ReadDir(dir)
		for _, t := range tasks {
			if _, err := taskrunner.RemoveStaleSockets(filepath.Join(dir, t.Name())); err == nil {
				_ = os.Remove(filepath.Join(dir, t.Name()))
			}
		}
		if os.Remove(dir) == nil {
			logger.Debug("removed a leftover socket directory", "dir", dir)
		}
	}
}
