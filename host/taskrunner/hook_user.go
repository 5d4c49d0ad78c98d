package taskrunner

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"

	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/host/jobspec"
)

// userHook resolves who the task runs as, before anything is made on disk
// (the task dir hook gives that user its directories):
//
//   - the task's `user`, under any driver;
//   - for an exec task without one, the uid its allocation holds for it
//     (the dynamic range), else nobody;
//   - for a raw_exec or go_plugin task without one, nil: the agent's user.
//
// A task with a user of its own also gets the allocation's group, which
// opens the allocation's shared directory to it (package allocdir).
type userHook struct{ cfg *Config }

func (h *userHook) Name() string { return "user" }

func (h *userHook) Prestart(_ context.Context, req *HookRequest) error {
	req.User = nil
	u, err := h.resolve(req)
	if err != nil {
		return err
	}
	if u == nil {
		return h.agentAllowed(req)
	}
	if g := req.Owners.Group; g >= 0 && uint32(g) != u.GID && !slices.Contains(u.Groups, uint32(g)) {
		u.Groups = append(slices.Clone(u.Groups), uint32(g))
	}
	req.User = u
	return nil
}

// agentAllowed holds a task that runs as the agent's user to the denied
// ids too: the agent's user may be denied (denied_host_uids = "0" with the
// agent running as root refuses every such task).
func (h *userHook) agentAllowed(req *HookRequest) error {
	if h.cfg.UserAllowed == nil {
		return nil
	}
	me := &driver.User{UID: uint32(os.Geteuid()), GID: uint32(os.Getegid())}
	if gs, err := os.Getgroups(); err == nil {
		for _, g := range gs {
			me.Groups = append(me.Groups, uint32(g))
		}
	}
	if err := h.cfg.UserAllowed(me); err != nil {
		return Fatal(fmt.Errorf("task %q: no user given, so the agent's user: %w", req.Task.Name, err))
	}
	return nil
}

func (h *userHook) resolve(req *HookRequest) (*driver.User, error) {
	name := req.Task.User
	switch {
	case name == "" && req.Task.Driver != jobspec.DriverExec:
		return nil, nil
	case name == "" && req.DynamicUID != 0:
		// No entry in the user database: no name, no home (the env
		// hook makes HOME the task's own directory). The agent's
		// config keeps the range clear of denied ids.
		return &driver.User{UID: req.DynamicUID, GID: req.DynamicUID}, nil
	case name == "":
		name = jobspec.DefaultExecUser
	}
	u, err := LookupUser(name)
	if err != nil {
		return nil, Fatal(fmt.Errorf("task %q: user: %w", req.Task.Name, err))
	}
	if h.cfg.UserAllowed != nil {
		if err := h.cfg.UserAllowed(u); err != nil {
			return nil, Fatal(fmt.Errorf("task %q: user %q: %w", req.Task.Name, name, err))
		}
	}
	return u, nil
}

// LookupUser resolves a user name (or a numeric uid) to the ids a task runs
// with: its uid, primary group, supplementary groups and home.
func LookupUser(name string) (*driver.User, error) {
	u, err := user.Lookup(name)
	if err != nil {
		if _, nerr := strconv.ParseUint(name, 10, 32); nerr == nil {
			u, err = user.LookupId(name)
		}
		if err != nil {
			return nil, fmt.Errorf("no user %q on this machine", name)
		}
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %q: uid %q: %w", name, u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %q: gid %q: %w", name, u.Gid, err)
	}
	out := &driver.User{Name: u.Username, UID: uint32(uid), GID: uint32(gid), Home: u.HomeDir}
	if ids, err := u.GroupIds(); err == nil {
		for _, id := range ids {
			if g, err := strconv.ParseUint(id, 10, 32); err == nil && uint32(g) != out.GID {
				out.Groups = append(out.Groups, uint32(g))
			}
		}
	}
	return out, nil
}
