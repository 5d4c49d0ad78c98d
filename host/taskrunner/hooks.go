package taskrunner

import (
	"context"
	"errors"
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/host/allocdir"
	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/logmon"
	"github.com/pluginhost/pluginhost/internal/beneath"
)

// Hook is one concern around a task's life. A hook implements Name and any
// of the point interfaces below; the runner calls them in registration
// order (Stop in reverse).
type Hook interface {
	Name() string
}

// PrestartHook runs before every launch (first start and each restart). It
// may add to req.Env; an error stops the launch (see Fatal).
type PrestartHook interface {
	Prestart(ctx context.Context, req *HookRequest) error
}

// PoststartHook runs once the task is running: after a launch, or after a
// restarted agent re-adopted it (req.Restored is then true). The CSI
// supervisor probes and registers the plugin here.
type PoststartHook interface {
	Poststart(ctx context.Context, req *HookRequest, task driver.Task) error
}

// ExitedHook runs after the task's process has exited, before the restart
// decision.
type ExitedHook interface {
	Exited(ctx context.Context, req *HookRequest, res *driver.ExitResult) error
}

// StopHook runs when the task is stopped for good (explicit stop, or no
// restarts left); not when the agent merely shuts down.
type StopHook interface {
	Stop(ctx context.Context, req *HookRequest) error
}

// hookCloser is a hook that holds something (a goroutine) which must end
// with its task runner, whether the task was stopped or the agent is
// shutting down; StopHook covers only the former.
type hookCloser interface {
	close()
}

// HookRequest is what a hook knows about its task. One request lives as long
// as the task runner; Env is rebuilt before each launch.
type HookRequest struct {
	AllocID    string
	AllocIndex int
	Job        *jobspec.Job
	Group      *jobspec.TaskGroup
	Task       *jobspec.Task

	// Owners is who owns the allocation's tree (its group, if any).
	Owners allocdir.Owners
	// DynamicUID is the uid the allocation holds for this task (an exec
	// task that names no user), 0 for none.
	DynamicUID uint32

	AllocDir   string // <data_dir>/alloc/<id>
	SharedDir  string // <alloc dir>/alloc
	LogDir     string // <alloc dir>/alloc/logs
	TaskDir    string // <alloc dir>/<task>
	LocalDir   string // NOMAD_TASK_DIR
	SecretsDir string
	// SocketDir is the task's own control socket directory (0700), inside
	// its allocation's (TaskSocketDir). The allocation's is short enough
	// that SocketBudget more bytes (this directory's element and a socket
	// name) still fit sun_path.
	SocketDir string

	// Env is the task's environment; prestart hooks add to it (the CSI
	// hook sets CSI_ENDPOINT unless the job did).
	Env map[string]string
	// Restored is set in Poststart when the task was re-adopted.
	Restored bool
	// User is who the task runs as (the user hook); nil is the agent's.
	User *driver.User
	// Cgroup is the launch's control group (the cgroup hook); nil when
	// cgroups are not in use.
	Cgroup *taskCgroup

	Logger hclog.Logger

	// Stdout and Stderr are set by the logmon hook for the launch.
	Stdout, Stderr *os.File
	// Extra handle fields the logmon hook records.
	LogmonPid       int
	LogmonStartTime uint64
	// logmon is the launch's shipper until the runner has checked that
	// it came up.
	logmon *logmon.Process

	runner *TaskRunner
}

// driverCgroup is Cgroup as a driver.Cgroup: nil stays an untyped nil.
func (r *HookRequest) driverCgroup() driver.Cgroup {
	if r.Cgroup == nil {
		return nil
	}
	return r.Cgroup
}

// Restart asks the runner to kill and restart the task, counting against
// the restart policy; reason appears in the task's events.
func (r *HookRequest) Restart(reason string) { r.runner.requestRestart(reason, false) }

// Fail asks the runner to kill the task and not restart it.
func (r *HookRequest) Fail(reason string) { r.runner.requestRestart(reason, true) }

// Emit records a task event (e.g. "Plugin became healthy").
func (r *HookRequest) Emit(typ, msg string) { r.runner.emit(newEvent(typ, msg)) }

type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

// Fatal marks a hook or launch error as one that no restart can fix, so the
// task fails at once instead of consuming its restart attempts.
func Fatal(err error) error {
	if err == nil {
		return nil
	}
	return &fatalError{err}
}

// IsFatal reports whether err was marked with Fatal.
func IsFatal(err error) bool {
	var f *fatalError
	// A path a task tampered with stays so at the next launch: refusing
	// it again would only spend the restart policy.
	return errors.As(err, &f) || errors.Is(err, driver.ErrChecksumMismatch) || errors.Is(err, beneath.ErrUnsafe)
}
