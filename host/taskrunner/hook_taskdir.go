package taskrunner

import (
	"context"
	"fmt"

	"github.com/pluginhost/pluginhost/host/allocdir"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/internal/beneath"
)

// taskDirHook builds Nomad's allocation layout with the owners and modes
// of package allocdir: alloc/ (shared), alloc/logs, <task>/local
// (NOMAD_TASK_DIR) and <task>/secrets, the last two the task user's. It
// runs before every launch and sets every mode again, so the tree is right
// whatever the previous launch did to it; an entry the task replaced with
// a link is refused, and the task fails with an event naming it.
type taskDirHook struct{ cfg *Config }

func (taskDirHook) Name() string { return "task_dir" }

func (h *taskDirHook) Prestart(_ context.Context, req *HookRequest) error {
	uid, gid := -1, -1
	if u := req.User; u != nil {
		uid, gid = int(u.UID), int(u.GID)
	}
	if err := allocdir.BuildTask(h.cfg.DataDir, req.AllocID, req.Task.Name, req.Owners, uid, gid); err != nil {
		return fmt.Errorf("task dir: %w", err)
	}
	if req.User != nil && req.Task.Driver != jobspec.DriverExec {
		// A raw_exec or go_plugin task walks the host's paths to its
		// directory as its own user: it must get through data_dir
		// (search, not list). An exec task does not: the mount helper
		// enters its root as root. What is above data_dir is the
		// operator's.
		top, err := beneath.Open(h.cfg.DataDir)
		if err != nil {
			return fmt.Errorf("let user %q reach its task directory: %w", req.User.Name, err)
		}
		defer top.Close()
		if err := searchable(top); err != nil {
			return fmt.Errorf("let user %q reach its task directory: %w", req.User.Name, err)
		}
	}
	return nil
}

// searchable adds search permission for group and others to d.
func searchable(d *beneath.Dir) error {
	st, err := d.Stat()
	if err != nil {
		return err
	}
	perm := beneath.FileMode(st.Mode)
	if perm&0o011 == 0o011 {
		return nil
	}
	return d.Chmod(perm | 0o011)
}
