package taskrunner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/pluginhost/pluginhost/host/allocdir"
	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/pluginlog"
	"github.com/pluginhost/pluginhost/sdk"
)

// PluginLogPath is the file an sdk plugin task appends its JSON log lines
// to (PLUGINHOST_LOG_FILE): next to the task's stdout and stderr files, so
// that it is where an operator looks for logs and goes with the allocation.
func PluginLogPath(logDir, task string) string {
	return filepath.Join(logDir, pluginLogName(task))
}

// pluginLogHook gives a go_plugin task the sdk's logging environment and,
// while the task runs, follows its log file into the agent's log. The
// plugin's stderr carries the same lines, but it belongs to the log shipper
// (a separate process, so that output outlives the agent); the file is the
// copy the agent can read.
//
// The hook owns its Follower: started in Poststart, stopped (after reading
// what the file holds) when the task exits, and when the task runner ends,
// which covers stop, kill and agent shutdown.
type pluginLogHook struct {
	cfg *Config

	mu sync.Mutex
	// offset is the file's size just before the launch: lines from that
	// point on are this launch's, including those written before
	// Poststart.
	offset int64
	fl     *pluginlog.Follower
}

func (h *pluginLogHook) Name() string { return "plugin_log" }

func (h *pluginLogHook) Prestart(_ context.Context, req *HookRequest) error {
	if req.Task.Driver != jobspec.DriverGoPlugin {
		return nil
	}
	// The job may choose its plugin's level; the file is the agent's,
	// since the agent follows no other.
	if _, ok := req.Env[sdk.EnvLogLevel]; !ok {
		req.Env[sdk.EnvLogLevel] = h.cfg.LogLevel
	}
	path := PluginLogPath(req.LogDir, req.Task.Name)
	req.Env[sdk.EnvLogFile] = path
	size, err := preparePluginLog(h.cfg.DataDir, req)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.offset = size
	h.mu.Unlock()
	return nil
}

// preparePluginLog makes the plugin's log file (beneath the log directory,
// through no link) and returns its size. The log directory is root's, so a
// plugin running as a user of its own could not create the file itself: it
// gets it made, as its own, with the mode of the other log files.
func preparePluginLog(dataDir string, req *HookRequest) (int64, error) {
	logs, err := allocdir.OpenLogs(dataDir, req.AllocID)
	if err != nil {
		return 0, fmt.Errorf("plugin log: %w", err)
	}
	defer logs.Close()
	f, err := logs.OpenFile(pluginLogName(req.Task.Name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, allocdir.LogFileMode(req.Owners))
	if err != nil {
		return 0, fmt.Errorf("plugin log: %w", err)
	}
	defer f.Close()
	if u := req.User; u != nil && req.Owners.Chown {
		// The group stays the directory's (the allocation's).
		if err := f.Chown(int(u.UID), -1); err != nil {
			return 0, fmt.Errorf("plugin log: %w", err)
		}
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("plugin log: %w", err)
	}
	return fi.Size(), nil
}

func pluginLogName(task string) string { return task + ".plugin.log" }

// Poststart starts following. A re-adopted plugin is followed from the
// file's current end: lines it wrote while no agent ran are not shipped
// again (they stay in the file and in its stderr log), so a restarted agent
// never logs a line twice, at the price of not logging those lines at all.
func (h *pluginLogHook) Poststart(_ context.Context, req *HookRequest, _ driver.Task) error {
	if req.Task.Driver != jobspec.DriverGoPlugin {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fl != nil {
		h.fl.Stop()
		h.fl = nil
	}
	logs, err := allocdir.OpenLogs(h.cfg.DataDir, req.AllocID)
	if err != nil {
		return fmt.Errorf("plugin log: %w", err)
	}
	offset := h.offset
	if req.Restored {
		offset = 0
		if st, err := logs.Lstat(pluginLogName(req.Task.Name)); err == nil {
			offset = st.Size
		}
	}
	logger := h.cfg.Logger.Named("plugin").With("alloc_id", req.AllocID, "task", req.Task.Name)
	h.fl = pluginlog.Follow(logs, pluginLogName(req.Task.Name), offset, logger, 0)
	return nil
}

func (h *pluginLogHook) Exited(context.Context, *HookRequest, *driver.ExitResult) error {
	h.close()
	return nil
}

func (h *pluginLogHook) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fl != nil {
		h.fl.Stop()
		h.fl = nil
	}
}
