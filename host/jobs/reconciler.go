package jobs

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/host/config"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/host/taskrunner"
	"github.com/pluginhost/pluginhost/internal/reconcile"
)

// StopTimeout bounds one allocation's stop; kill_timeout is per task and
// the stops run in parallel, so this is generous.
const StopTimeout = 5 * time.Minute

// Store is the job records the reconciler reads and writes (*state.DB).
type Store interface {
	Job(id string) (*state.JobState, error)
	JobVersions(id string) ([]*state.JobVersion, error)
	FinishUpdate(jobID string, out *state.UpdateOutcome) error
	MarkStable(jobID string, version uint64) error
	DeleteJob(jobID string) error
}

// Runner is one allocation's runner as the reconciler drives it
// (*taskrunner.AllocRunner).
type Runner interface {
	ID() string
	State() *taskrunner.AllocSnapshot
	Run()
	StopFor(ctx context.Context, reason string) error
	Shutdown(ctx context.Context) error
	Destroy(ctx context.Context) error
	Done() <-chan struct{}
	// SocketDir is removed by the collector once the allocation is dead;
	// AllocDir is where its files are, for the API's views.
	SocketDir() string
	AllocDir() string
}

// Factory records new allocations. Both methods commit once: the runners
// they return are recorded and not started; the reconciler starts them.
type Factory interface {
	// Submit records job as the next version of its job together with one
	// allocation per slot (nothing when it equals the current version),
	// and serving, when not nil, as the version that serves meanwhile
	// (state.Job.Serving).
	Submit(job *jobspec.Job, serving *uint64) (*state.SubmitResult, []Runner, error)
	// Create records an allocation for each slot of version of job.
	Create(job *jobspec.Job, version uint64, slots []Slot) ([]Runner, error)
}

// Job event types the reconciler announces through Config.OnJobEvent.
const (
	EventUpdateSucceeded   = "JobUpdateSucceeded"
	EventUpdateFailed      = "JobUpdateFailed"
	EventVersionSuperseded = "JobVersionSuperseded"
)

// Config is what New needs.
type Config struct {
	Store   Store
	Factory Factory
	Logger  hclog.Logger
	// Exclusive reports whether a job writes to a volume that allows one
	// writer (its versions cannot run side by side); nil means never.
	Exclusive func(*jobspec.Job) bool
	// OnJobEvent announces an update's outcome or a superseded version.
	OnJobEvent func(jobID, typ, message string)
	// OnAllocDone is called once an allocation's runner has finished
	// while the reconciler runs (not when it is let go of at shutdown).
	OnAllocDone func(r Runner)
	// GC is the collector's policy (the agent's gc block); DataDir is
	// the directory whose file system its thresholds watch.
	GC      config.GCConfig
	DataDir string
}

// Reconciler owns a job's allocations: it tracks every allocation runner
// of the agent, runs the job reconciler on a queue keyed by job ID, and
// collects finished allocations.
type Reconciler struct {
	cfg   Config
	log   hclog.Logger
	queue *reconcile.Queue

	// jobMu is held by a submission from its commit until its runners are
	// tracked, by a pass while it decides and acts, and by a collection
	// while it destroys: a pass never sees a recorded version without its
	// allocations, nor an allocation vanish under it.
	jobMu sync.Mutex

	mu     sync.Mutex
	allocs map[string]*entry
	// changed is closed and replaced whenever an allocation may have
	// finished or gone; waiters select on it instead of polling.
	changed chan struct{}
	// runCtx is Run's context (nil before Run): goroutines that watch
	// runners live as long as the reconciler runs.
	runCtx context.Context
	gcKick chan struct{}
	wg     sync.WaitGroup
}

type entry struct {
	r     Runner
	jobID string
	// created never changes; kept so that listings sort without a full
	// snapshot (events included) of every allocation.
	created time.Time
	// started: Run was called; stopping: a stop was started (under mu).
	started, stopping bool
}

// New builds a reconciler; Run starts it.
func New(cfg Config) (*Reconciler, error) {
	if cfg.Store == nil || cfg.Factory == nil {
		return nil, errors.New("jobs: a store and a runner factory are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Exclusive == nil {
		cfg.Exclusive = func(*jobspec.Job) bool { return false }
	}
	if cfg.OnJobEvent == nil {
		cfg.OnJobEvent = func(string, string, string) {}
	}
	if cfg.OnAllocDone == nil {
		cfg.OnAllocDone = func(Runner) {}
	}
	r := &Reconciler{cfg: cfg, log: cfg.Logger.Named("jobs"), allocs: map[string]*entry{},
		changed: make(chan struct{}), gcKick: make(chan struct{}, 1)}
	q, err := reconcile.New(reconcile.Config{Reconcile: r.reconcile, Logger: r.log})
	if err != nil {
		return nil, fmt.Errorf("jobs: queue: %w", err)
	}
	r.queue = q
	return r, nil
}

// Track tracks a restored allocation that never launched a task, without
// starting it: a pass starts it once no superseded allocation is alive
// (after a crash the agent may restore a held-back version together with
// the superseded one it waited for).
func (r *Reconciler) Track(ar Runner) { r.track(ar) }

// NeverLaunched reports whether an allocation that should run was recorded
// and never tried to launch a task: every task has its Received event only.
// A restored allocation like that is tracked (Track), not adopted: it may
// be one the bound held back.
func NeverLaunched(as *state.AllocState) bool {
	if as.Alloc.DesiredStatus != state.AllocDesiredStatusRun {
		return false
	}
	for _, tr := range as.Tasks {
		if tr.Handle != nil {
			return false
		}
		for _, ev := range tr.Events {
			if ev.Type != taskrunner.EventReceived {
				return false
			}
		}
	}
	return true
}

// Adopt tracks a restored allocation and runs it: live tasks are
// re-adopted, dead ones go through their restart policy. Call it before
// Run, which reconciles every job once.
func (r *Reconciler) Adopt(ar Runner) {
	e := r.track(ar)
	r.start(e)
}

// Run starts the queue, adds every job in jobIDs and every job with an
// allocation, and starts the collector when GC.Interval is set. It
// returns at once; Shutdown ends it.
func (r *Reconciler) Run(ctx context.Context, jobIDs []string) {
	r.mu.Lock()
	r.runCtx = ctx
	entries := make([]*entry, 0, len(r.allocs))
	for _, e := range r.allocs {
		entries = append(entries, e)
	}
	r.mu.Unlock()
	for _, e := range entries {
		r.watch(ctx, e)
	}
	r.queue.Run(ctx)
	for _, id := range jobIDs {
		r.queue.Add(id)
	}
	for _, e := range entries {
		r.queue.Add(e.jobID)
	}
	if r.cfg.GC.Interval > 0 {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.gc(ctx)
		}()
	}
}

// Submit records job as the next version of its job with all its
// allocations and waits for a pass to act on it (the allocations start
// once nothing superseded is alive). An unchanged job records nothing but
// is still reconciled, so re-submitting converges to the file.
func (r *Reconciler) Submit(ctx context.Context, job *jobspec.Job) (*state.SubmitResult, []string, error) {
	r.jobMu.Lock()
	res, ids, err := r.submitLocked(job)
	r.jobMu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	if err := r.queue.AddAndWait(ctx, job.ID); err != nil {
		// The submission is recorded; the queue retries on its own.
		r.log.Warn("job recorded, first reconcile failed", "job_id", job.ID, "error", err)
	}
	return res, ids, nil
}

func (r *Reconciler) submitLocked(job *jobspec.Job) (*state.SubmitResult, []string, error) {
	// What serves now is recorded with the new version, so that it keeps
	// serving until the new one is healthy: a pass after the submission,
	// or after a crash, cannot tell any more what served when it arrived.
	var serving *uint64
	var stable uint64
	hasStable := false
	if js, err := r.cfg.Store.Job(job.ID); err == nil {
		stable, hasStable = js.Job.StableVersion()
	}
	if sv, ok := ServingVersion(r.allocsOf(job.ID), stable, hasStable); ok {
		serving = &sv
	}
	res, runners, err := r.cfg.Factory.Submit(job, serving)
	if err != nil {
		return nil, nil, err
	}
	ids := make([]string, len(runners))
	for i, ar := range runners {
		r.track(ar)
		ids[i] = ar.ID()
	}
	if res.Changed {
		r.log.Info("job version recorded", "job_id", job.ID, "version", res.Job.Version, "allocs", len(runners))
	}
	return res, ids, nil
}

// Enqueue asks for a pass of the job (a task's change may settle it).
func (r *Reconciler) Enqueue(jobID string) { r.queue.Add(jobID) }

// Reconcile adds the job and waits for a pass that started after the call.
func (r *Reconciler) Reconcile(ctx context.Context, jobID string) error {
	return r.queue.AddAndWait(ctx, jobID)
}

// QueueStats are the job queue's figures, for metrics.
func (r *Reconciler) QueueStats() reconcile.Stats { return r.queue.Stats() }

// reconcile is one pass: it moves a job's allocations towards its durable
// record (Decide) and acts on the decision. Every step is either recorded
// before it is taken or derived again from the record on the next pass,
// so an agent killed at any point finishes the work when it starts again.
// Stops run in the background: a pass never waits for a kill_timeout.
func (r *Reconciler) reconcile(ctx context.Context, jobID string) (reconcile.Result, error) {
	r.jobMu.Lock()
	defer r.jobMu.Unlock()
	v, err := r.view(jobID)
	if err != nil {
		return reconcile.Result{}, err
	}
	p := Decide(v)
	return reconcile.Result{RequeueAfter: p.RequeueAfter}, r.act(jobID, v, p)
}

// view gathers what Decide needs.
func (r *Reconciler) view(jobID string) (View, error) {
	v := View{Now: time.Now()}
	js, err := r.cfg.Store.Job(jobID)
	switch {
	case errors.Is(err, state.ErrJobNotFound):
	case err != nil:
		return v, fmt.Errorf("reading job %q: %w", jobID, err)
	default:
		v.Job = js
		v.Exclusive = r.cfg.Exclusive(js.Spec.Job)
		v.Stable, v.HasStable = js.Job.StableVersion()
	}
	if v.Job != nil && v.Job.Job.Serving != nil {
		v.Serving, v.HasServing = *v.Job.Job.Serving, true
	}
	v.Allocs = r.allocsOf(jobID)
	if v.Job != nil && !v.HasStable && hasOtherVersions(v) {
		// A record written before LastStable existed: the versions
		// kept say which one was stable.
		versions, err := r.cfg.Store.JobVersions(jobID)
		if err != nil {
			return v, fmt.Errorf("reading versions of job %q: %w", jobID, err)
		}
		for _, jv := range versions {
			if jv.Stable {
				v.Stable, v.HasStable = jv.Version, true
				break
			}
		}
	}
	return v, nil
}

// allocsOf is what a pass sees of a job's allocations, newest first.
func (r *Reconciler) allocsOf(jobID string) []Alloc {
	entries := r.jobEntries(jobID)
	allocs := make([]Alloc, len(entries))
	r.mu.Lock()
	for i, e := range entries {
		allocs[i] = Alloc{Done: isDone(e.r), Started: e.started, Stopping: e.stopping}
	}
	r.mu.Unlock()
	for i, e := range entries {
		allocs[i].Snap = e.r.State()
	}
	return allocs
}

func hasOtherVersions(v View) bool {
	for _, a := range v.Allocs {
		if a.Snap.Alloc.JobVersion != v.Job.Job.Version {
			return true
		}
	}
	return false
}

// act carries out a plan, in Plan's order.
func (r *Reconciler) act(jobID string, v View, p Plan) error {
	if p.Outcome != nil {
		if err := r.cfg.Store.FinishUpdate(jobID, p.Outcome); err != nil {
			return fmt.Errorf("recording the update of job %q: %w", jobID, err)
		}
		typ := EventUpdateSucceeded
		if p.Outcome.Status == state.UpdateFailed {
			typ = EventUpdateFailed
			r.log.Warn("job update failed", "job_id", jobID, "version", p.Outcome.Version, "reason", p.Outcome.Description)
		}
		r.cfg.OnJobEvent(jobID, typ, fmt.Sprintf("version %d: %s", p.Outcome.Version, p.Outcome.Description))
	}
	if p.MarkStable != nil {
		if err := r.cfg.Store.MarkStable(jobID, *p.MarkStable); err != nil {
			return fmt.Errorf("recording version %d of job %q as stable: %w", *p.MarkStable, jobID, err)
		}
	}
	for _, sv := range p.Superseded {
		msg := fmt.Sprintf("version %d superseded by version %d before it became healthy: its allocations stop now", sv, v.Job.Job.Version)
		r.log.Info("job version superseded", "job_id", jobID, "version", sv, "by", v.Job.Job.Version)
		r.cfg.OnJobEvent(jobID, EventVersionSuperseded, msg)
	}
	for _, s := range p.Stops {
		if e := r.entry(s.AllocID); e != nil {
			r.stopAsync(e, s.Reason)
		}
	}
	if len(p.Create) > 0 {
		runners, err := r.cfg.Factory.Create(v.Job.Spec.Job, v.Job.Job.Version, p.Create)
		if err != nil {
			return fmt.Errorf("creating allocations of job %q: %w", jobID, err)
		}
		for _, ar := range runners {
			e := r.track(ar)
			if p.StartNew {
				r.start(e)
			}
		}
		r.log.Info("allocations created for missing slots", "job_id", jobID, "version", v.Job.Job.Version, "count", len(runners))
	}
	for _, id := range p.Start {
		if e := r.entry(id); e != nil {
			r.start(e)
		}
	}
	for _, id := range p.Forget {
		if err := r.destroy(id); err != nil {
			return fmt.Errorf("forgetting an allocation of job %q: %w", jobID, err)
		}
	}
	if len(p.Forget) > 0 {
		r.notify()
	}
	if p.DeleteJob {
		if err := r.cfg.Store.DeleteJob(jobID); err != nil {
			return fmt.Errorf("forgetting job %q: %w", jobID, err)
		}
		r.log.Info("job purged", "job_id", jobID)
		r.queue.Forget(jobID)
	}
	if p.Revert {
		return r.revert(v.Job)
	}
	return nil
}

// revert submits the newest stable version again when a failed version's
// groups ask for auto_revert, as Nomad does.
func (r *Reconciler) revert(js *state.JobState) error {
	versions, err := r.cfg.Store.JobVersions(js.Job.ID)
	if err != nil {
		return fmt.Errorf("reading versions of job %q: %w", js.Job.ID, err)
	}
	for _, v := range versions {
		if v.Stable && v.Version != js.Job.Version {
			r.log.Info("job update failed, reverting to the last stable version", "job_id", js.Job.ID, "version", v.Version)
			if _, _, err := r.submitLocked(v.Job); err != nil {
				return fmt.Errorf("reverting job %q to version %d: %w", js.Job.ID, v.Version, err)
			}
			r.queue.Add(js.Job.ID)
			return nil
		}
	}
	r.log.Debug("job update failed and auto_revert found no stable version", "job_id", js.Job.ID)
	return nil
}

// track adds a runner, not started.
func (r *Reconciler) track(ar Runner) *entry {
	e := &entry{r: ar, jobID: ar.State().Alloc.JobID, created: ar.State().Alloc.CreateTime}
	r.mu.Lock()
	r.allocs[ar.ID()] = e
	ctx := r.runCtx
	r.mu.Unlock()
	if ctx != nil {
		r.watch(ctx, e)
	}
	return e
}

// watch announces an allocation's end once all its tasks are dead: the
// runners mark a task dead after its last task event, so without this no
// event would show a stopped allocation complete.
func (r *Reconciler) watch(ctx context.Context, e *entry) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		select {
		case <-e.r.Done():
		case <-ctx.Done():
			return
		}
		if ctx.Err() != nil {
			return // the runner was shut down with the agent
		}
		r.cfg.OnAllocDone(e.r)
		r.notify()
		r.queue.Add(e.jobID)
		r.kickGC()
	}()
}

func (r *Reconciler) start(e *entry) {
	r.mu.Lock()
	if e.started {
		r.mu.Unlock()
		return
	}
	e.started = true
	r.mu.Unlock()
	e.r.Run()
}

// stopAsync stops an allocation in the background, once: StopFor records
// the desired status first, so a crash before it is taken is repaired by
// the next pass, and after it by the runner's restore.
func (r *Reconciler) stopAsync(e *entry, reason string) {
	r.mu.Lock()
	if e.stopping {
		r.mu.Unlock()
		return
	}
	e.stopping = true
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), StopTimeout)
		defer cancel()
		if err := e.r.StopFor(ctx, reason); err != nil {
			r.log.Warn("stopping allocation", "alloc_id", e.r.ID(), "error", err)
		}
		r.notify()
		r.queue.Add(e.jobID)
	}()
}

// destroy removes a finished allocation: record, directories, sockets.
func (r *Reconciler) destroy(id string) error {
	e := r.entry(id)
	if e == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), StopTimeout)
	defer cancel()
	if err := e.r.Destroy(ctx); err != nil {
		return fmt.Errorf("destroying allocation %s: %w", id, err)
	}
	r.mu.Lock()
	delete(r.allocs, id)
	r.mu.Unlock()
	return nil
}

// notify wakes everyone waiting for an allocation to finish or go.
func (r *Reconciler) notify() {
	r.mu.Lock()
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

func (r *Reconciler) entry(id string) *entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.allocs[id]
}

// jobEntries are a job's allocations, newest first.
func (r *Reconciler) jobEntries(jobID string) []*entry {
	r.mu.Lock()
	var out []*entry
	for _, e := range r.allocs {
		if e.jobID == jobID {
			out = append(out, e)
		}
	}
	r.mu.Unlock()
	sortNewestFirst(out)
	return out
}

func sortNewestFirst(entries []*entry) {
	sort.SliceStable(entries, func(i, j int) bool {
		ti, tj := entries[i].created, entries[j].created
		if !ti.Equal(tj) {
			return ti.After(tj)
		}
		return entries[i].r.ID() < entries[j].r.ID()
	})
}

func (r *Reconciler) all() []*entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*entry, 0, len(r.allocs))
	for _, e := range r.allocs {
		out = append(out, e)
	}
	return out
}

// Alloc is the runner of a tracked allocation, nil if unknown.
func (r *Reconciler) Alloc(id string) Runner {
	if e := r.entry(id); e != nil {
		return e.r
	}
	return nil
}

// JobAllocs are a job's allocations, newest first.
func (r *Reconciler) JobAllocs(jobID string) []Runner {
	entries := r.jobEntries(jobID)
	out := make([]Runner, len(entries))
	for i, e := range entries {
		out[i] = e.r
	}
	return out
}

// All are every tracked allocation, in no order.
func (r *Reconciler) All() []Runner {
	entries := r.all()
	out := make([]Runner, len(entries))
	for i, e := range entries {
		out[i] = e.r
	}
	return out
}

// JobOf is the job of a tracked allocation, "" if unknown.
func (r *Reconciler) JobOf(allocID string) string {
	if e := r.entry(allocID); e != nil {
		return e.jobID
	}
	return ""
}

// Matching are the IDs of tracked allocations that start with prefix,
// sorted; an exact ID is the only match.
func (r *Reconciler) Matching(prefix string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.allocs[prefix]; ok {
		return []string{prefix}
	}
	var out []string
	for id := range r.allocs {
		if strings.HasPrefix(id, prefix) {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// WaitStopped waits until every allocation of the job is done and, for a
// purge, forgotten; then it reports the last pass's error, if any.
func (r *Reconciler) WaitStopped(ctx context.Context, jobID string, purge bool) error {
	for {
		r.mu.Lock()
		changed := r.changed
		r.mu.Unlock()
		entries := r.jobEntries(jobID)
		done := true
		for _, e := range entries {
			done = done && isDone(e.r)
		}
		if done && (!purge || len(entries) == 0) {
			if st := r.queue.Status(jobID); st.LastError != nil {
				return fmt.Errorf("stopping job %q: %w", jobID, st.LastError)
			}
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("stopping job %q: %w", jobID, ctx.Err())
		}
	}
}

// StopAll stops every allocation and waits (a dev agent on exit).
func (r *Reconciler) StopAll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, e := range r.all() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := e.r.StopFor(ctx, "agent stopped"); err != nil {
				r.log.Warn("stopping allocation", "alloc_id", e.r.ID(), "error", err)
			}
		}()
	}
	wg.Wait()
}

// Shutdown waits for passes in flight to end (no pass may start
// allocations while they are let go of), lets go of every runner without
// touching its tasks, and waits for the reconciler's goroutines. Run's
// context must have ended, or Run never been called.
func (r *Reconciler) Shutdown(ctx context.Context) {
	r.queue.Wait()
	for _, e := range r.all() {
		if err := e.r.Shutdown(ctx); err != nil {
			r.log.Warn("allocation shutdown", "alloc_id", e.r.ID(), "error", err)
		}
	}
	r.wg.Wait()
}

// Wait waits for passes in flight to end.
func (r *Reconciler) Wait() { r.queue.Wait() }

func isDone(ar Runner) bool {
	select {
	case <-ar.Done():
		return true
	default:
		return false
	}
}
