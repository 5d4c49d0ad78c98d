package taskrunner

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"

	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/host/jobspec"
)

// DefaultExecUser is who an exec task runs as unless it names a `user`,
// as on Nomad.
const DefaultExecUser = "nobody"

// userHook resolves the task's `user` and gives that user the directories
// it must write: local/, secrets/ and the shared alloc/ (1777: open to
// every user, since tasks of one group may run as different users, but
// sticky, see Prestart); the socket hook gives it its socket directory. A
// task without a user runs as the agent's.
type userHook struct{ cfg *Config }

func (h *userHook) Name() string { return "user" }

func (h *userHook) Prestart(_ context.Context, req *HookRequest) error {
	name := req.Task.User
	if name == "" && req.Task.Driver == jobspec.DriverExec {
		name = DefaultExecUser
	}
	req.User = nil
	if name == "" {
		return nil
	}
	u, err := LookupUser(name)
	if err != nil {
		return Fatal(fmt.Errorf("task %q: user: %w", req.Task.Name, err))
	}
	if h.cfg.UserAllowed != nil {
		if err := h.cfg.UserAllowed(u); err != nil {
			return Fatal(fmt.Errorf("task %q: user %q: %w", req.Task.Name, name, err))
		}
	}
	for _, d := range []string{req.LocalDir, req.SecretsDir} {
		if err := os.Chown(d, int(u.UID), int(u.GID)); err != nil {
			return fmt.Errorf("give %s to user %q: %w", d, name, err)
		}
		// The user's own: other local users, other tasks' users among
		// them, read none of it (the directories above are 0711).
		if err := os.Chmod(d, 0o700); err != nil {
			return fmt.Errorf("give %s to user %q: %w", d, name, err)
		}
	}
	// Sticky, unlike Nomad's 0777: alloc/logs is the agent's, and its
	// log shipper writes there as root. A task that could rename it and
	// put a symlink in its place would have root create and fill files
	// in any directory of the host (and the task dir hook chmod it).
	if err := os.Chmod(req.SharedDir, 0o777|os.ModeSticky); err != nil {
		return fmt.Errorf("open the shared alloc dir to user %q: %w", name, err)
	}
	// The user must get through data_dir to its task directory (0711:
	// through, not listing), as Nomad's allocation root is; what is above
	// data_dir is the operator's.
	for p := req.AllocDir; ; p = filepath.Dir(p) {
		if err := searchable(p); err != nil {
			return fmt.Errorf("let user %q reach its task directory: %w", name, err)
		}
		if p == h.cfg.DataDir || p == filepath.Dir(p) {
			break
		}
	}
	req.User = u
	return nil
}

// searchable adds search permission for everyone to dir.
func searchable(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if m := fi.Mode().Perm(); m&0o011 != 0o011 {
		return os.Chmod(dir, m|0o011)
	}
	return nil
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
