package taskrunner

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/pluginhost/pluginhost/host/allocdir"
	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/host/logmon"
	"github.com/pluginhost/pluginhost/internal/beneath"
)

// logmonHook starts the task's log shipper before each launch. The shipper
// is a separate process reading the task's pipes, so logs keep flowing into
// alloc/logs/<task>.std{out,err}.N while the agent is down.
type logmonHook struct{ cfg *Config }

func (h *logmonHook) Name() string { return "logmon" }

func (h *logmonHook) Prestart(ctx context.Context, req *HookRequest) error {
	lc := req.Task.Logs
	if lc != nil && lc.Disabled {
		null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("logs disabled: %w", err)
		}
		req.Stdout, req.Stderr = null, null
		req.LogmonPid, req.LogmonStartTime = 0, 0
		req.logmon = nil
		return nil
	}
	maxFiles, maxMB := 10, 10
	if lc != nil {
		if lc.MaxFiles > 0 {
			maxFiles = lc.MaxFiles
		}
		if lc.MaxFileSizeMB > 0 {
			maxMB = lc.MaxFileSizeMB
		}
	}
	size := int64(maxMB) << 20
	if h.cfg.LogFileSizeOverride > 0 {
		size = h.cfg.LogFileSizeOverride
	}
	// Not waiting for the shipper to be ready here takes its start-up
	// off the launch path: the task starts on the pipes meanwhile, and
	// the runner checks readiness (logmonReady) once the task's handle
	// is stored.
	// The shipper gets the directory, not its path: alloc/ is the
	// tasks' to write, and a path would be resolved again in there.
	logs, err := allocdir.OpenLogs(h.cfg.DataDir, req.AllocID)
	if err != nil {
		return fmt.Errorf("log directory: %w", err)
	}
	p, err := logmon.Spawn(logmon.Config{
		Command: h.cfg.LogmonCommand, Dir: logs, Task: req.Task.Name,
		MaxFiles: maxFiles, MaxFileSize: size, FileMode: allocdir.LogFileMode(req.Owners),
	})
	_ = logs.Close()
	if err != nil {
		return err
	}
	// The start time is the fork's: exec does not change it, so it can be
	// read before the shipper is up.
	st, _ := driver.ProcStartTime(p.Pid)
	req.Stdout, req.Stderr = p.Stdout, p.Stderr
	req.LogmonPid, req.LogmonStartTime = p.Pid, st
	req.logmon = p
	return nil
}

// logmonReady waits for the launch's shipper, if it has one. A shipper that
// failed leaves the task's output without a reader, so the task is
// restarted (with a new shipper), counting against its restart policy.
func (tr *TaskRunner) logmonReady(ctx context.Context) bool {
	p := tr.req.logmon
	tr.req.logmon = nil
	if p == nil {
		return true
	}
	if err := p.Ready(ctx); err != nil {
		if ctx.Err() == nil {
			// A log file a task replaced with a link stays so: the
			// task fails, with the path in its event.
			tr.requestRestart("log shipper failed: "+err.Error(), errors.Is(err, beneath.ErrUnsafe))
		}
		return false
	}
	return true
}
