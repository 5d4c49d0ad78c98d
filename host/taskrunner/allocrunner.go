package taskrunner

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/pluginhost/pluginhost/host/allocdir"
	"github.com/pluginhost/pluginhost/host/idpool"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/state"
)

// AllocRunner runs the tasks of one allocation.
type AllocRunner struct {
	cfg   *Config
	group *jobspec.TaskGroup
	tasks []*TaskRunner

	id        string
	allocDir  string
	socketDir string

	// persistMu serialises alloc record writes (mutation and store write
	// together), so an older copy can never overwrite a newer one: a
	// status update racing Stop must not store DesiredStatus=run again.
	persistMu sync.Mutex
	// destroyed: Destroy deleted the record; nothing is written again
	// (under persistMu).
	destroyed bool
	mu        sync.Mutex
	alloc     state.Alloc

	runOnce sync.Once
	done    chan struct{}

	// received are the Received events of a prepared allocation, between
	// PrepareAlloc and Recorded.
	received []*state.TaskEvent

	// hookReq and ahooks are the allocation's hooks (allochooks.go);
	// ahooks is nil when there are none.
	hookReq *AllocHookRequest
	ahooks  *allocHooks
}

// NewUUID returns a random (version 4) UUID from crypto/rand.
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails on Linux (Go 1.24+ panics instead)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// NewAllocRunner creates allocation index of group in job, with a new ID,
// and records it in a commit of its own; Run starts it. The agent uses
// PrepareAlloc instead, to record a job's allocations with the job.
func NewAllocRunner(cfg *Config, job *jobspec.Job, group string, index int) (*AllocRunner, error) {
	ar, err := PrepareAlloc(cfg, job, 0, group, index)
	if err != nil {
		return nil, err
	}
	if err := cfg.Store.Update(ar.Record); err != nil {
		return nil, fmt.Errorf("record allocation %s: %w", ar.ID(), err)
	}
	ar.Recorded()
	return ar, nil
}

// PrepareAlloc builds the runner of a new allocation (index of group in
// version of job) without recording it. The caller writes it with Record in
// a transaction of its own, which may hold other allocations and the job's
// record, calls Recorded once that committed, and then Run: an allocation
// nobody can find after a crash must never start.
func PrepareAlloc(cfg *Config, job *jobspec.Job, version uint64, group string, index int) (*AllocRunner, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if job == nil {
		return nil, errors.New("taskrunner: nil job")
	}
	now := time.Now()
	a := &state.Alloc{
		ID: NewUUID(), JobID: job.ID, JobVersion: version, TaskGroup: group, Index: index, Job: job,
		DesiredStatus: state.AllocDesiredStatusRun, ClientStatus: state.AllocClientStatusPending,
		CreateTime: now, ModifyTime: now,
	}
	if err := acquireIDs(cfg, a); err != nil {
		return nil, err
	}
	ar, err := newAllocRunner(cfg, a, nil)
	if err != nil {
		if cfg.IDs != nil {
			cfg.IDs.Release(a.ID)
		}
		return nil, err
	}
	ar.received = make([]*state.TaskEvent, len(ar.tasks))
	for i := range ar.tasks {
		ar.received[i] = newEvent(EventReceived, "Task received by the agent")
	}
	return ar, nil
}

// acquireIDs gives a new allocation its dynamic ids: a group, and a uid
// for each exec task that names no user.
func acquireIDs(cfg *Config, a *state.Alloc) error {
	if cfg.IDs == nil {
		return nil
	}
	g := a.Job.Group(a.TaskGroup)
	if g == nil {
		return nil // newAllocRunner says why
	}
	var users []string
	for _, t := range g.Tasks {
		if t.Driver == jobspec.DriverExec && t.User == "" {
			users = append(users, t.Name)
		}
	}
	ids, err := cfg.IDs.Acquire(a.ID, 1+len(users))
	if err != nil {
		return fmt.Errorf("allocation %s: %w", a.ID, err)
	}
	a.IDs = &state.AllocIDs{Group: ids[0]}
	for i, t := range users {
		if a.IDs.Users == nil {
			a.IDs.Users = map[string]uint32{}
		}
		a.IDs.Users[t] = ids[1+i]
	}
	return nil
}

// Discard gives back what a prepared allocation that will never be
// recorded holds (its dynamic ids): its transaction failed.
func (ar *AllocRunner) Discard() {
	if ar != nil && ar.cfg.IDs != nil {
		ar.cfg.IDs.Release(ar.id)
	}
}

// Record writes a prepared allocation, and each task's Received event and
// pending state, in tx: nothing of it is worth a commit of its own, and a
// restarted agent finds either all of it or nothing.
func (ar *AllocRunner) Record(tx *state.Tx) error {
	ar.mu.Lock()
	a := ar.alloc
	ar.mu.Unlock()
	if err := tx.PutAlloc(&a); err != nil {
		return err
	}
	pending := state.TaskState{State: state.TaskStatePending}
	for i, tr := range ar.tasks {
		if err := tx.AppendTaskEvent(a.ID, tr.task.Name, ar.received[i]); err != nil {
			return err
		}
		if err := tx.PutTaskState(a.ID, tr.task.Name, &pending); err != nil {
			return err
		}
	}
	return nil
}

// Recorded takes note that Record's transaction committed: the tasks are
// pending and their Received events are announced.
func (ar *AllocRunner) Recorded() {
	for i, tr := range ar.tasks {
		tr.mu.Lock()
		tr.st.State = state.TaskStatePending
		tr.events = append(tr.events, ar.received[i])
		tr.mu.Unlock()
		tr.announce(ar.received[i : i+1])
	}
	ar.received = nil
}

// RestoreAllocRunner rebuilds the runner of a stored allocation; Run then
// re-adopts its live tasks and deals with the ones that died meanwhile.
func RestoreAllocRunner(cfg *Config, as *state.AllocState) (*AllocRunner, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if as == nil || as.Alloc == nil || as.Alloc.Job == nil {
		return nil, errors.New("taskrunner: restore: allocation record without a job")
	}
	a := *as.Alloc
	if cfg.IDs != nil {
		// Before any new allocation takes ids: these are in use, by
		// running tasks or by files in the allocation's directory.
		if err := cfg.IDs.Hold(a.ID, a.IDs.All()...); errors.Is(err, idpool.ErrShared) {
			cfg.Logger.Warn("a restored allocation's dynamic ids are another agent's too", "alloc_id", a.ID, "error", err)
		} else if err != nil {
			return nil, fmt.Errorf("allocation %s: %w", a.ID, err)
		}
	}
	return newAllocRunner(cfg, &a, as.Tasks)
}

func newAllocRunner(cfg *Config, a *state.Alloc, recs map[string]*state.TaskRecord) (*AllocRunner, error) {
	group := a.Job.Group(a.TaskGroup)
	if group == nil {
		return nil, fmt.Errorf("allocation %s: job %q has no group %q", a.ID, a.Job.ID, a.TaskGroup)
	}
	if err := CheckPathElem("allocation ID", a.ID); err != nil {
		return nil, fmt.Errorf("allocation: %w", err)
	}
	sockDir, err := SocketDir(cfg.DataDir, cfg.SocketRoot, a.ID)
	if err != nil {
		return nil, fmt.Errorf("allocation %s: %w", a.ID, err)
	}
	ar := &AllocRunner{
		cfg: cfg, group: group, alloc: *a, id: a.ID,
		allocDir:  filepath.Join(cfg.DataDir, "alloc", a.ID),
		socketDir: sockDir,
		done:      make(chan struct{}),
	}
	logger := cfg.Logger.Named("alloc").With("alloc_id", a.ID)
	batch := a.Job.Type == jobspec.JobTypeBatch || a.Job.Type == jobspec.JobTypeSysBatch
	for _, t := range group.Tasks {
		restart := t.Restart
		if restart == nil {
			restart = group.Restart
		}
		sig, _ := killSignal(t.KillSignal) // validated by the validate hook
		if sig == 0 {
			sig = 2
		}
		tr := &TaskRunner{
			cfg: cfg, allocID: a.ID, task: t, drv: cfg.Drivers[t.Driver],
			logger:     logger.Named("task").With("task", t.Name),
			restarts:   newRestartTracker(restart, batch, cfg.Rand),
			killSig:    sig,
			killCh:     make(chan struct{}),
			shutdownCh: make(chan struct{}),
			restartCh:  make(chan restartRequest, 1),
			done:       make(chan struct{}),
			owner:      ar,
		}
		if rec := recs[t.Name]; rec != nil {
			tr.restored = rec
			if rec.State != nil {
				tr.st = *rec.State
			}
			tr.events = append(tr.events, rec.Events...)
			tr.handle = rec.Handle
		}
		if err := CheckPathElem("task name", t.Name); err != nil {
			return nil, fmt.Errorf("allocation %s: %w", a.ID, err)
		}
		taskDir := filepath.Join(ar.allocDir, t.Name)
		tr.req = &HookRequest{
			AllocID: a.ID, AllocIndex: a.Index, Job: a.Job, Group: group, Task: t,
			Owners: owners(a), DynamicUID: a.IDs.UserOf(t.Name),
			AllocDir: ar.allocDir, SharedDir: filepath.Join(ar.allocDir, "alloc"),
			LogDir:  filepath.Join(ar.allocDir, "alloc", "logs"),
			TaskDir: taskDir, LocalDir: filepath.Join(taskDir, "local"), SecretsDir: filepath.Join(taskDir, "secrets"),
			SocketDir: TaskSocketDir(sockDir, len(ar.tasks)), Logger: tr.logger, runner: tr,
		}
		tr.hooks = []Hook{&validateHook{cfg: cfg}, &userHook{cfg: cfg}, &taskDirHook{cfg: cfg}, &envHook{cfg: cfg}, &cgroupHook{cfg: cfg}, &pluginLogHook{cfg: cfg}, socketHook{}, &logmonHook{cfg: cfg}}
		if cfg.ExtraHooks != nil {
			tr.hooks = append(tr.hooks, cfg.ExtraHooks(tr.req)...)
		}
		if tr.drv == nil {
			// Keep the runner: the validate hook turns this into a task
			// failure with an event, rather than a lost allocation.
			tr.drv = missingDriver{name: t.Driver}
		}
		ar.tasks = append(ar.tasks, tr)
	}
	ar.hookReq = &AllocHookRequest{
		AllocID: a.ID, Index: a.Index, Job: a.Job, Group: group, AllocDir: ar.allocDir,
		TaskDirs: make(map[string]string, len(ar.tasks)), Logger: logger,
		note: func(typ, msg string) {
			for _, tr := range ar.tasks {
				tr.apply(change{events: []*state.TaskEvent{newEvent(typ, msg)}, informational: true})
			}
		},
	}
	for _, tr := range ar.tasks {
		ar.hookReq.TaskDirs[tr.task.Name] = tr.req.TaskDir
	}
	if cfg.AllocHooks != nil {
		if hooks := cfg.AllocHooks(ar.hookReq); len(hooks) > 0 {
			ar.ahooks = newAllocHooks(ar, hooks)
		}
	}
	return ar, nil
}

// owners is who owns the allocation's tree: its group, if it has one.
func owners(a *state.Alloc) allocdir.Owners {
	chown := os.Geteuid() == 0
	if a.IDs == nil {
		return allocdir.NoGroup(chown)
	}
	return allocdir.Owners{Group: int(a.IDs.Group), Chown: chown}
}

// ID is the allocation ID.
func (ar *AllocRunner) ID() string { return ar.id }

// SocketDir is the allocation's control socket directory; each task has
// its own directory inside it (TaskSocketDir).
func (ar *AllocRunner) SocketDir() string { return ar.socketDir }

// AllocDir is <data_dir>/alloc/<id>.
func (ar *AllocRunner) AllocDir() string { return ar.allocDir }

// Run starts every task's runner; it returns at once. A restored
// allocation whose stop was interrupted finishes stopping.
func (ar *AllocRunner) Run() {
	ar.runOnce.Do(func() {
		stopping := ar.desiredStatus() == state.AllocDesiredStatusStop
		// An allocation restored with every task dead (a finished batch
		// job) launches nothing: its prerun would only claim volumes for
		// postrun to release again.
		if ar.ahooks != nil && !stopping && !ar.allDead() {
			ar.ahooks.start()
		}
		for _, tr := range ar.tasks {
			if stopping {
				tr.kill()
			}
			go tr.run()
		}
		go func() {
			for _, tr := range ar.tasks {
				<-tr.done
			}
			if ar.ahooks != nil && ar.allDead() {
				ar.ahooks.postrun()
			}
			close(ar.done)
		}()
	})
}

// Done is closed when every task runner has returned: all tasks dead,
// or the runner shut down.
func (ar *AllocRunner) Done() <-chan struct{} { return ar.done }

// Stop stops the allocation for good: it records the desired status, kills
// every task (kill_signal, then SIGKILL after kill_timeout) and waits.
func (ar *AllocRunner) Stop(ctx context.Context) error { return ar.StopFor(ctx, "") }

// StopFor is Stop with a reason, which each task's Killing event gives
// (e.g. the job's version was superseded), so that a user reading the
// allocation's events sees why it ended.
func (ar *AllocRunner) StopFor(ctx context.Context, reason string) error {
	err := ar.persistAlloc(func(a *state.Alloc) bool {
		a.DesiredStatus = state.AllocDesiredStatusStop
		return true
	})
	if err != nil {
		return fmt.Errorf("stop allocation %s: %w", ar.ID(), err)
	}
	ar.Run() // a never-started runner must still reach Done
	if ar.ahooks != nil {
		ar.ahooks.stop()
	}
	for _, tr := range ar.tasks {
		tr.killFor(reason)
	}
	select {
	case <-ar.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop allocation %s: %w", ar.ID(), ctx.Err())
	}
}

// Shutdown lets go of the allocation without touching its tasks, as the
// agent does on SIGINT/SIGTERM or before a restart: handles stay in the
// store for RestoreAllocRunner.
func (ar *AllocRunner) Shutdown(ctx context.Context) error {
	if ar.ahooks != nil {
		ar.ahooks.stop()
	}
	for _, tr := range ar.tasks {
		tr.shutdown()
	}
	ar.runOnce.Do(func() { close(ar.done) })
	select {
	case <-ar.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("shutdown allocation %s: %w", ar.id, ctx.Err())
	}
}

// Destroy stops the allocation and removes its record, directories and
// socket directory.
func (ar *AllocRunner) Destroy(ctx context.Context) error {
	if err := ar.Stop(ctx); err != nil {
		return err
	}
	// From here on no write may bring the record back: a second Destroy
	// or a late status update would otherwise re-create a headless
	// allocation (PutAlloc creates what is missing), which a kill -9
	// before the next delete would leave for the next agent to restore.
	ar.persistMu.Lock()
	ar.destroyed = true
	ar.persistMu.Unlock()
	var errs []error
	if err := ar.cfg.Store.DeleteAlloc(ar.id); err != nil {
		errs = append(errs, err)
	}
	dirErr := os.RemoveAll(ar.allocDir)
	errs = append(errs, dirErr, os.RemoveAll(ar.socketDir))
	if dirErr == nil && ar.cfg.IDs != nil {
		// Only now: files owned by the allocation's uids are gone with
		// its directory, so the next holder finds none of them.
		ar.cfg.IDs.Release(ar.id)
	}
	return errors.Join(errs...)
}

// taskFailed kills the other tasks of the allocation when one failed for
// good (restart policy exhausted, an unrecoverable error), as Nomad does:
// an allocation is all its tasks, and it fails with any of them. A stop in
// progress already kills them.
func (ar *AllocRunner) taskFailed(failed *TaskRunner) {
	if ar.desiredStatus() == state.AllocDesiredStatusStop {
		return
	}
	for _, tr := range ar.tasks {
		if tr == failed || tr.killed() {
			continue
		}
		tr.mu.Lock()
		dead := tr.st.State == state.TaskStateDead
		tr.mu.Unlock()
		if dead {
			continue
		}
		tr.emit(newEvent(EventSiblingFailed, fmt.Sprintf("Task's sibling %q failed", failed.task.Name)))
		tr.killFor(fmt.Sprintf("sibling task %q failed", failed.task.Name))
	}
}

// Task returns the runner of the named task, nil if there is none.
func (ar *AllocRunner) Task(name string) *TaskRunner {
	for _, tr := range ar.tasks {
		if tr.task.Name == name {
			return tr
		}
	}
	return nil
}

// AllocSnapshot is a copy of an allocation's state.
type AllocSnapshot struct {
	Alloc state.Alloc
	Tasks []TaskSnapshot
}

// State returns a snapshot that the caller may keep and modify.
func (ar *AllocRunner) State() *AllocSnapshot {
	ar.mu.Lock()
	s := &AllocSnapshot{Alloc: ar.alloc}
	ar.mu.Unlock()
	for _, tr := range ar.tasks {
		s.Tasks = append(s.Tasks, tr.snapshot())
	}
	return s
}

func (ar *AllocRunner) desiredStatus() string {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.alloc.DesiredStatus
}

// clientStatus derives the allocation's status from its tasks', as Nomad
// does: failed if any failed, running if any runs, complete when all are
// dead.
func (ar *AllocRunner) clientStatus() string {
	running, dead, failed := 0, 0, 0
	for _, tr := range ar.tasks {
		tr.mu.Lock()
		switch tr.st.State {
		case state.TaskStateRunning:
			running++
		case state.TaskStateDead:
			dead++
			if tr.st.Failed {
				failed++
			}
		}
		tr.mu.Unlock()
	}
	switch {
	case failed > 0 && running == 0 && dead == len(ar.tasks):
		return state.AllocClientStatusFailed
	case running > 0:
		return state.AllocClientStatusRunning
	case dead == len(ar.tasks):
		return state.AllocClientStatusComplete
	}
	return state.AllocClientStatusPending
}

// persistAlloc applies mutate to the alloc record and stores it if mutate
// reports a change.
func (ar *AllocRunner) persistAlloc(mutate func(a *state.Alloc) bool) error {
	ar.persistMu.Lock()
	defer ar.persistMu.Unlock()
	if ar.destroyed {
		return nil
	}
	ar.mu.Lock()
	if !mutate(&ar.alloc) {
		ar.mu.Unlock()
		return nil
	}
	ar.alloc.ModifyTime = time.Now()
	a := ar.alloc
	ar.mu.Unlock()
	return ar.cfg.Store.Update(func(tx *state.Tx) error { return tx.PutAlloc(&a) })
}
