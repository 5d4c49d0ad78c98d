package taskrunner

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/nsexec"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/internal/text"
)

// maxEventsInMemory mirrors the store's per-task event cap.
const maxEventsInMemory = 100

// TaskRunner runs one task: launches it through its hooks and driver,
// watches it, applies its restart policy, and records all of it. Its
// goroutine (run) is owned by the AllocRunner and ends on task death, Kill,
// or Shutdown.
type TaskRunner struct {
	cfg     *Config
	allocID string
	task    *jobspec.Task
	drv     driver.Driver
	hooks   []Hook
	req     *HookRequest
	logger  hclog.Logger

	restarts *restartTracker
	killSig  syscall.Signal

	// restored is the stored record when the agent restarted; nil for a
	// fresh task.
	restored *state.TaskRecord

	// owner commits this task's records (with the allocation's status).
	owner *AllocRunner

	// writeMu serialises this task's store writes; see apply.
	writeMu sync.Mutex
	mu      sync.Mutex
	st      state.TaskState
	handle  *state.TaskHandle
	events  []*state.TaskEvent
	// unsaved are informational events not yet in the store; the next
	// write takes them along.
	unsaved []*state.TaskEvent
	running driver.Task
	// cgroup is the running launch's group (req.Cgroup, which only the
	// run goroutine may touch), for Stats; nil when not running.
	cgroup *taskCgroup
	// sampler keeps the references of Stats' CPU percentages.
	sampler statsSampler

	killCh   chan struct{}
	killOnce sync.Once
	// killReason says why the task is killed ("sibling task failed", or
	// a stop's reason from AllocRunner.StopFor); guarded by mu.
	killReason string
	shutdownCh chan struct{}
	shutOnce   sync.Once
	restartCh  chan restartRequest
	// restartNow: the launch that just ended was killed by RestartNow;
	// guarded by mu.
	restartNow bool
	done       chan struct{}
}

type restartRequest struct {
	reason string
	fail   bool
	// now restarts at once, outside the restart policy (RestartNow).
	now bool
}

// TaskSnapshot is a copy of a task's recorded state.
type TaskSnapshot struct {
	Name   string
	State  state.TaskState
	Handle *state.TaskHandle
	Events []*state.TaskEvent
}

func (tr *TaskRunner) snapshot() TaskSnapshot {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	s := TaskSnapshot{Name: tr.task.Name, State: tr.st}
	if tr.handle != nil {
		h := *tr.handle
		s.Handle = &h
	}
	s.Events = make([]*state.TaskEvent, len(tr.events))
	for i, e := range tr.events {
		c := *e
		s.Events[i] = &c
	}
	return s
}

// setRunning is called by the run goroutine only: it reads req.Cgroup.
func (tr *TaskRunner) setRunning(t driver.Task) {
	tr.mu.Lock()
	tr.running = t
	tr.cgroup = nil
	if t != nil {
		tr.cgroup = tr.req.Cgroup
	}
	tr.mu.Unlock()
}

func (tr *TaskRunner) requestRestart(reason string, fail bool) {
	select {
	case tr.restartCh <- restartRequest{reason: reason, fail: fail}:
	default: // one pending request is enough
	}
}

// Signal sends sig to the running task's process group.
func (tr *TaskRunner) Signal(sig syscall.Signal) error {
	tr.mu.Lock()
	t := tr.running
	tr.mu.Unlock()
	if t == nil {
		return fmt.Errorf("task %s is not running", tr.task.Name)
	}
	tr.emit(newEvent(EventSignaling, "Task being sent signal "+sig.String()))
	return t.Signal(sig)
}

func (tr *TaskRunner) kill() { tr.killOnce.Do(func() { close(tr.killCh) }) }

// killFor kills the task with a reason its Killing event gives.
func (tr *TaskRunner) killFor(reason string) {
	tr.mu.Lock()
	if tr.killReason == "" {
		tr.killReason = reason
	}
	tr.mu.Unlock()
	tr.kill()
}
func (tr *TaskRunner) shutdown() { tr.shutOnce.Do(func() { close(tr.shutdownCh) }) }

func (tr *TaskRunner) killed() bool {
	select {
	case <-tr.killCh:
		return true
	default:
		return false
	}
}

func (tr *TaskRunner) run() {
	defer close(tr.done)
	defer tr.closeHooks()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Hooks and launches in flight give up on shutdown or kill.
		select {
		case <-tr.shutdownCh:
		case <-tr.killCh:
		case <-ctx.Done():
		}
		cancel()
	}()

	// The restart interval counts from here, as Nomad's does from its task
	// runner's start, not from the first exit.
	tr.restarts.begin(time.Now())
	t, restoredDead := tr.restore(ctx)
	if restoredDead {
		return
	}
	var pending *driver.ExitResult
	if t == nil && tr.restored != nil && tr.restored.Handle != nil {
		// The task died while the agent was down.
		pending = &driver.ExitResult{Unknown: true, ExitCode: -1}
	}
	for {
		if pending == nil && t == nil {
			if tr.killed() {
				tr.finish(ctx, false, "")
				return
			}
			select {
			case <-tr.shutdownCh:
				return
			default:
			}
			var err error
			t, err = tr.start(ctx)
			if err != nil {
				if ctx.Err() != nil {
					if tr.killed() {
						tr.finish(context.Background(), false, "")
					}
					return
				}
				if IsFatal(err) {
					tr.emit(newEvent(EventNotRestarting, "Error was unrecoverable: "+err.Error()))
					tr.finish(ctx, true, "")
					return
				}
				pending = &driver.ExitResult{ExitCode: -1}
			}
		}
		if pending == nil {
			var stop bool
			pending, stop = tr.wait(t)
			t = nil
			if stop {
				return
			}
		}
		res := pending
		pending = nil
		tr.setRunning(nil)
		tr.runExited(ctx, res)
		if res.SetupErr != nil && IsFatal(res.SetupErr) {
			// A link the task planted is still there at the next
			// launch: restarting would only spend the policy.
			tr.emit(newEvent(EventNotRestarting, "Error was unrecoverable: "+res.SetupErr.Error()))
			tr.finish(ctx, true, "")
			return
		}
		if tr.takeRestartNow() {
			tr.restartAtOnce()
			continue
		}
		d := tr.restarts.next(time.Now(), res.Successful())
		if !d.restart {
			if d.failed {
				tr.emit(newEvent(EventNotRestarting, d.reason))
			}
			tr.finish(ctx, d.failed || !res.Successful(), "")
			return
		}
		ev := newEvent(EventRestarting, restartingMessage(d))
		ev.Details = map[string]string{"restart_delay": d.delay.String(), "reason": d.reason}
		tr.apply(change{events: []*state.TaskEvent{ev}, state: func(s *state.TaskState) {
			s.State = state.TaskStatePending
			s.Restarts++
			s.LastRestart = time.Now()
		}})
		timer := time.NewTimer(d.delay)
		select {
		case <-timer.C:
		case <-tr.killCh:
			timer.Stop()
			tr.finish(context.Background(), false, "")
			return
		case <-tr.shutdownCh:
			timer.Stop()
			return
		}
	}
}

// restore re-adopts the task recorded before an agent restart. It returns
// (nil, true) when the task was already dead for good.
func (tr *TaskRunner) restore(ctx context.Context) (driver.Task, bool) {
	rec := tr.restored
	if rec == nil {
		return nil, false
	}
	if rec.Handle == nil {
		if rec.State != nil && rec.State.State == state.TaskStateDead {
			return nil, true
		}
		// Pending: the last agent may have died mid-launch (orphans.go).
		tr.killUntrackedCopies()
		return nil, false
	}
	h := rec.Handle
	dh := toDriverHandle(h)
	dh.Plugin = pluginSpec(tr.task)
	dh.SocketDir = tr.req.SocketDir
	// The group is the task's whether or not its leader is still alive:
	// whatever is left in it goes when the launch ends (cgroup hook).
	if cg, err := openCgroup(tr.cfg.Cgroups, h.CgroupPath); err != nil {
		tr.logger.Warn("task's cgroup not found again; its leftovers cannot be killed", "cgroup", h.CgroupPath, "error", err)
	} else if cg != nil {
		dh.Cgroup = cg
		tr.req.Cgroup = cg
	}
	t, err := tr.drv.Recover(ctx, dh, tr.logger)
	if err != nil {
		msg := "Task exited while the agent was down; its exit code is unknowable"
		switch {
		case errors.Is(err, driver.ErrPidReused):
			msg = fmt.Sprintf("Task exited while the agent was down; pid %d now belongs to another process, which was not signalled; exit code unknowable", h.Pid)
		case !errors.Is(err, driver.ErrTaskGone):
			msg = "Task could not be re-adopted and was stopped: " + err.Error()
		}
		ev := newEvent(EventTerminated, msg)
		ev.ExitCode = -1
		ev.Details = map[string]string{"exit_code": "unknown"}
		tr.apply(change{events: []*state.TaskEvent{ev}, setHandle: true})
		return nil, false
	}
	tr.emit(newEvent(EventReattached, "Task re-adopted after agent restart (pid "+strconv.Itoa(h.Pid)+")"))
	if h.LogmonPid > 0 {
		if st, err := driver.ProcStartTime(h.LogmonPid); err != nil || st != h.LogmonStartTime {
			// The task's output pipes have no reader: its next write
			// fails (EPIPE) or kills it (SIGPIPE). Say so; the restart that
			// follows gets a new shipper.
			tr.emit(newEvent(EventLogShipperGone, fmt.Sprintf("Log shipper (pid %d) is gone; task output is not being recorded", h.LogmonPid)))
		}
	}
	tr.setRunning(t)
	tr.setState(func(s *state.TaskState) { s.State = state.TaskStateRunning })
	tr.req.Restored = true
	// Poststart hooks read the environment (a CSI plugin's endpoint). It
	// is built again from the job, as the launch built it, never read
	// back from /proc/<pid>/environ: the task may rewrite that, and a
	// plugin running as nobody made the agent dial another plugin's
	// root-only socket after a restart that way.
	tr.req.Env = nil
	if err := (&envHook{cfg: tr.cfg}).Prestart(ctx, tr.req); err != nil {
		tr.logger.Warn("task environment not rebuilt", "error", err)
	}
	tr.runPoststart(ctx, t)
	return t, false
}

func (tr *TaskRunner) start(ctx context.Context) (driver.Task, error) {
	// A restart asked for by a hook of the previous launch, racing with its
	// exit, is about that launch: it must not kill this one.
	select {
	case <-tr.restartCh:
	default:
	}
	tr.apply(change{events: []*state.TaskEvent{newEvent(EventTaskSetup, "Building task directory and environment")}, informational: true})
	tr.req.Restored = false
	tr.req.Stdout, tr.req.Stderr = nil, nil
	tr.req.logmon = nil
	closeStdio := func() {
		if tr.req.Stdout != nil {
			_ = tr.req.Stdout.Close()
		}
		if tr.req.Stderr != nil {
			_ = tr.req.Stderr.Close()
		}
		tr.req.Stdout, tr.req.Stderr = nil, nil
	}
	defer closeStdio()
	for _, h := range tr.hooks {
		ph, ok := h.(PrestartHook)
		if !ok {
			continue
		}
		if err := ph.Prestart(ctx, tr.req); err != nil {
			err = fmt.Errorf("prestart hook %q: %w", h.Name(), err)
			tr.emit(newEvent(EventSetupFailure, err.Error()))
			return nil, err
		}
	}
	var mounts []nsexec.Mount
	if h := tr.owner.ahooks; h != nil {
		// The allocation's volumes are mounted before any task starts.
		// The wait comes after the prestart hooks, so that the task's
		// directories and log shipper are made while the volume's CSI
		// calls are in flight.
		if err := h.await(ctx); err != nil {
			if ctx.Err() == nil {
				tr.emit(newEvent(EventSetupFailure, err.Error()))
			}
			return nil, err
		}
		mounts = h.req.Mounts[tr.task.Name]
	}
	vars := interpolationVars(tr.cfg, tr.req.Env)
	c := tr.task.Config
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = jobspec.Interpolate(a, vars)
	}
	workDir := jobspec.Interpolate(c.WorkDir, vars)
	var execCfg *driver.ExecConfig
	if tr.task.Driver == jobspec.DriverExec {
		// A path inside the task's root; "" is its "/", as on Nomad.
		caps, err := jobspec.ExecCapabilities(c, nil)
		if err != nil {
			err = Fatal(fmt.Errorf("task %s: %w", tr.task.Name, err))
			tr.emit(newEvent(EventDriverFailure, err.Error()))
			return nil, err
		}
		execCfg = &driver.ExecConfig{PIDMode: c.PIDMode, IPCMode: c.IPCMode, Caps: caps}
	} else if workDir == "" {
		workDir = tr.req.LocalDir
	}
	sctx, cancel := context.WithTimeout(ctx, tr.cfg.StartTimeout)
	defer cancel()
	t, err := tr.drv.Start(sctx, &driver.StartRequest{
		AllocID: tr.allocID, TaskName: tr.task.Name,
		Command: jobspec.Interpolate(c.Command, vars), Args: args, WorkDir: workDir,
		Env: envList(tr.req.Env), Checksum: c.Checksum,
		SocketDir: tr.req.SocketDir, Plugin: pluginSpec(tr.task),
		Mounts: mounts, MountHelper: tr.cfg.NsexecCommand,
		User: tr.req.User, TaskDir: tr.req.TaskDir, SharedDir: tr.req.SharedDir, Exec: execCfg,
		Cgroup: tr.req.driverCgroup(),
		Stdout: tr.req.Stdout, Stderr: tr.req.Stderr,
		Logger: tr.logger.Named("plugin"),
	})
	if err != nil {
		err = fmt.Errorf("start task %s: %w", tr.task.Name, err)
		// go-plugin's errors quote what the binary printed (an
		// unrecognised handshake line) as it came: escaped here, so that
		// every reader of the event gets text.
		tr.emit(newEvent(EventDriverFailure, text.EscapeLines(err.Error())))
		return nil, err
	}
	// The task has its copies of the output pipes; ours must go now, or
	// the shipper would not see EOF when the task ends during poststart.
	closeStdio()
	// The task is alive and nothing on disk knows it: until this commit
	// returns, a kill -9 of the agent leaves a task no later agent will
	// find. So the handle is the very next thing written, in one commit
	// with the running state, the Started event and the allocation's
	// status (one fsync rather than four), and nothing announces Started
	// or talks to the task before it is durable.
	tr.setRunning(t)
	tr.apply(change{
		setHandle: true, handle: toStateHandle(t.Handle(), tr.req.LogmonPid, tr.req.LogmonStartTime),
		state: func(s *state.TaskState) {
			s.State = state.TaskStateRunning
			s.StartedAt = time.Now()
			s.FinishedAt = time.Time{}
		},
		events: []*state.TaskEvent{newEvent(EventStarted, "Task started by the agent (pid "+strconv.Itoa(t.Handle().Pid)+")")},
	})
	if !tr.logmonReady(ctx) {
		return t, nil
	}
	tr.runPoststart(ctx, t)
	return t, nil
}

func (tr *TaskRunner) runPoststart(ctx context.Context, t driver.Task) {
	for _, h := range tr.hooks {
		if ph, ok := h.(PoststartHook); ok {
			if err := ph.Poststart(ctx, tr.req, t); err != nil {
				if ctx.Err() != nil {
					return
				}
				tr.requestRestart(fmt.Sprintf("poststart hook %q: %v", h.Name(), err), IsFatal(err))
				return
			}
		}
	}
}

// wait blocks until the task exits, is killed or restarted, or the agent
// shuts down. stop means the runner is finished.
func (tr *TaskRunner) wait(t driver.Task) (res *driver.ExitResult, stop bool) {
	select {
	case <-t.Done():
		res = t.Result()
		t.Detach()
		ev := newEvent(EventTerminated, exitMessage(res)+oomMessage(res, tr.task.Resources))
		ev.ExitCode, ev.Signal = res.ExitCode, res.Signal
		if res.OOMKilled {
			// Nomad's detail for a driver that detects OOM kills; on cgroup
			// v1 Nomad's own raw_exec reports oom_killed=false.
			ev.Details = map[string]string{"oom_killed": "true"}
		}
		tr.apply(change{events: []*state.TaskEvent{ev}, setHandle: true})
		return res, false
	case <-tr.killCh:
		tr.mu.Lock()
		reason := tr.killReason
		tr.mu.Unlock()
		tr.killTask(t, reason)
		tr.finish(context.Background(), false, "")
		return nil, true
	case r := <-tr.restartCh:
		tr.emit(newEvent(EventRestartSignal, r.reason))
		tr.killTask(t, r.reason)
		if r.now {
			tr.mu.Lock()
			tr.restartNow = true
			tr.mu.Unlock()
		}
		if r.fail {
			tr.emit(newEvent(EventNotRestarting, r.reason))
			tr.finish(context.Background(), true, "")
			return nil, true
		}
		return &driver.ExitResult{ExitCode: -1}, false
	case <-tr.shutdownCh:
		// The agent is going away, the task is not: keep the handle.
		t.Detach()
		return nil, true
	}
}

// restartingMessage is Nomad's Restarting event text: "Task restarting in
// 15.2s", led by the reason when it is not the ordinary one.
func restartingMessage(d decision) string {
	in := "Task restarting in " + d.delay.Round(time.Millisecond).String()
	if d.reason == "" || d.reason == reasonWithinPolicy {
		return in
	}
	return d.reason + " - " + in
}

func exitMessage(res *driver.ExitResult) string {
	switch {
	case res.SetupErr != nil:
		// The task's binary never ran: the mount helper's reason is the
		// news, not its exit code.
		return fmt.Sprintf("Exit Code: %d, the task was not started: %v", res.ExitCode, res.SetupErr)
	case res.Unknown:
		return "Exit code unknowable: the task was re-adopted and is not the agent's child"
	case res.Signal != 0:
		// Nomad's words for a Terminated event (nomad/structs/structs.go,
		// PopulateEventDisplayMessage), with the driver's 128+signal code.
		return fmt.Sprintf("Exit Code: %d, Signal: %d", res.ExitCode, res.Signal)
	default:
		return fmt.Sprintf("Exit Code: %d", res.ExitCode)
	}
}

// oomMessage is what a Terminated event adds when the kernel's OOM killer
// killed a process of the launch: the user should not have to find it in
// the kernel log.
func oomMessage(res *driver.ExitResult, r *jobspec.Resources) string {
	if !res.OOMKilled {
		return ""
	}
	if r == nil {
		return ", OOM Killed"
	}
	return fmt.Sprintf(", OOM Killed: the task reached its memory limit of %d MB", r.MemoryLimitMB())
}

// killTask stops t: kill_signal, SIGKILL after kill_timeout, bounded.
func (tr *TaskRunner) killTask(t driver.Task, reason string) {
	timeout := tr.task.KillTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	msg := fmt.Sprintf("Sent %s, waiting %s before force killing", tr.killSig, timeout)
	if limit := tr.cfg.MaxKillTimeout; limit > 0 && timeout > limit {
		// As Nomad's client: a job cannot make itself unstoppable.
		timeout = limit
		msg = fmt.Sprintf("Sent %s, waiting %s before force killing (kill_timeout %s is capped by the agent's max_kill_timeout)",
			tr.killSig, timeout, tr.task.KillTimeout)
	}
	if reason != "" {
		msg += ": " + reason
	}
	tr.emit(newEvent(EventKilling, msg))
	ctx, cancel := context.WithTimeout(context.Background(), timeout+10*time.Second)
	defer cancel()
	if err := t.Kill(ctx, tr.killSig, timeout); err != nil {
		tr.emit(newEvent(EventKillFailed, err.Error()))
	}
	res := t.Result()
	t.Detach()
	ev := newEvent(EventKilled, "Task successfully killed")
	if res != nil {
		ev.Message += "; " + exitMessage(res)
		ev.ExitCode, ev.Signal = res.ExitCode, res.Signal
	}
	tr.setRunning(nil)
	tr.apply(change{events: []*state.TaskEvent{ev}, setHandle: true})
}

func (tr *TaskRunner) runExited(ctx context.Context, res *driver.ExitResult) {
	if res.OOMKilled {
		countOOMKill(tr.cfg.Metrics, tr.labels())
	}
	for _, h := range tr.hooks {
		if eh, ok := h.(ExitedHook); ok {
			if err := eh.Exited(ctx, tr.req, res); err != nil {
				tr.logger.Warn("exited hook", "hook", h.Name(), "error", err)
			}
		}
	}
}

func (tr *TaskRunner) closeHooks() {
	for i := len(tr.hooks) - 1; i >= 0; i-- {
		if c, ok := tr.hooks[i].(hookCloser); ok {
			c.close()
		}
	}
}

// finish marks the task dead for good and runs the stop hooks.
func (tr *TaskRunner) finish(ctx context.Context, failed bool, _ string) {
	for i := len(tr.hooks) - 1; i >= 0; i-- {
		if sh, ok := tr.hooks[i].(StopHook); ok {
			if err := sh.Stop(ctx, tr.req); err != nil {
				tr.logger.Warn("stop hook", "hook", tr.hooks[i].Name(), "error", err)
			}
		}
	}
	tr.setRunning(nil)
	tr.setState(func(s *state.TaskState) {
		s.State = state.TaskStateDead
		s.Failed = failed
		s.FinishedAt = time.Now()
	})
	if failed {
		tr.owner.taskFailed(tr)
	}
}
