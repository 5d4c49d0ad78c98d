package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// fakeRunner is an allocation without processes: Run makes its task
// running at once; a stop records the reason and, unless the test holds it
// (slowStop), ends it.
type fakeRunner struct {
	w *world

	mu       sync.Mutex
	alloc    state.Alloc
	task     state.TaskState
	started  bool
	reason   string
	slowStop bool
	done     chan struct{}
	doneOnce sync.Once
}

func (f *fakeRunner) ID() string { return f.alloc.ID }

func (f *fakeRunner) State() *taskrunner.AllocSnapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &taskrunner.AllocSnapshot{Alloc: f.alloc, Tasks: []taskrunner.TaskSnapshot{{Name: "t", State: f.task}}}
}

func (f *fakeRunner) Run() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started {
		return
	}
	f.started = true
	if f.alloc.DesiredStatus == state.AllocDesiredStatusRun {
		f.task = state.TaskState{State: state.TaskStateRunning, StartedAt: f.w.now()}
		f.alloc.ClientStatus = state.AllocClientStatusRunning
	}
}

func (f *fakeRunner) StopFor(ctx context.Context, reason string) error {
	f.mu.Lock()
	f.alloc.DesiredStatus = state.AllocDesiredStatusStop
	f.reason = reason
	slow := f.slowStop
	f.mu.Unlock()
	if !slow {
		f.end()
	}
	f.w.stops.Done()
	select {
	case <-f.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// end kills the task: the allocation is done.
func (f *fakeRunner) end() {
	f.mu.Lock()
	f.task.State = state.TaskStateDead
	f.alloc.ClientStatus = state.AllocClientStatusComplete
	f.mu.Unlock()
	f.doneOnce.Do(func() { close(f.done) })
}

func (f *fakeRunner) Shutdown(context.Context) error {
	f.doneOnce.Do(func() { close(f.done) })
	return nil
}

func (f *fakeRunner) Destroy(ctx context.Context) error {
	f.w.stops.Add(1)
	if err := f.StopFor(ctx, "destroyed"); err != nil {
		return err
	}
	f.w.mu.Lock()
	f.w.destroyed = append(f.w.destroyed, f.ID())
	f.w.mu.Unlock()
	return nil
}

func (f *fakeRunner) Done() <-chan struct{} { return f.done }
func (f *fakeRunner) SocketDir() string     { return "" }
func (f *fakeRunner) AllocDir() string      { return "" }

// running reports whether its task runs (a process would exist).
func (f *fakeRunner) running() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.task.State == state.TaskStateRunning
}

// world is the store, the factory and a clock.
type world struct {
	mu        sync.Mutex
	clock     time.Time
	jobs      map[string]*state.JobState
	versions  map[string][]*state.JobVersion // newest first
	runners   []*fakeRunner
	destroyed []string
	events    []string
	slowStop  bool
	seq       int
	// stops counts the stops a pass started that have not recorded
	// their desired status yet (pass waits for them, not for the kill).
	stops sync.WaitGroup
}

func newWorld() *world {
	return &world{clock: t0, jobs: map[string]*state.JobState{}, versions: map[string][]*state.JobVersion{}}
}

func (w *world) now() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.clock
}

func (w *world) advance(d time.Duration) {
	w.mu.Lock()
	w.clock = w.clock.Add(d)
	w.mu.Unlock()
}

func (w *world) Job(id string) (*state.JobState, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	js, ok := w.jobs[id]
	if !ok {
		return nil, fmt.Errorf("job %s: %w", id, state.ErrJobNotFound)
	}
	j := *js.Job
	return &state.JobState{Job: &j, Spec: js.Spec}, nil
}

func (w *world) JobVersions(id string) ([]*state.JobVersion, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.versions[id]), nil
}

func (w *world) FinishUpdate(id string, out *state.UpdateOutcome) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	js := w.jobs[id]
	js.Job.Update = out
	if out.Status == state.UpdateSuccessful {
		v := out.Version
		js.Job.LastStable = &v
		for _, jv := range w.versions[id] {
			if jv.Version == v {
				jv.Stable = true
			}
		}
	}
	return nil
}

func (w *world) MarkStable(id string, v uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	js := w.jobs[id]
	if js.Job.LastStable == nil || *js.Job.LastStable < v {
		js.Job.LastStable = &v
	}
	return nil
}

func (w *world) DeleteJob(id string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.jobs, id)
	delete(w.versions, id)
	return nil
}

func (w *world) Submit(job *jobspec.Job, serving *uint64) (*state.SubmitResult, []Runner, error) {
	w.mu.Lock()
	js, ok := w.jobs[job.ID]
	var v uint64
	if ok {
		v = js.Job.Version + 1
		j := *js.Job
		j.Version, j.Stop, j.Purge, j.Serving = v, false, false, serving
		js = &state.JobState{Job: &j}
	} else {
		js = &state.JobState{Job: &state.Job{ID: job.ID}}
	}
	js.Spec = &state.JobVersion{Version: v, Job: job}
	w.jobs[job.ID] = js
	w.versions[job.ID] = append([]*state.JobVersion{js.Spec}, w.versions[job.ID]...)
	w.mu.Unlock()
	var slots []Slot
	for _, g := range job.TaskGroups {
		for i := 0; i < g.Count; i++ {
			slots = append(slots, Slot{g.Name, i})
		}
	}
	runners, err := w.Create(job, v, slots)
	return &state.SubmitResult{Job: js.Job, Changed: true}, runners, err
}

func (w *world) Create(job *jobspec.Job, version uint64, slots []Slot) ([]Runner, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Runner
	for _, s := range slots {
		w.seq++
		f := &fakeRunner{w: w, slowStop: w.slowStop, done: make(chan struct{}), alloc: state.Alloc{
			ID: fmt.Sprintf("v%d-%s%d-%03d", version, s.Group, s.Index, w.seq), JobID: job.ID, JobVersion: version,
			TaskGroup: s.Group, Index: s.Index, Job: job, DesiredStatus: state.AllocDesiredStatusRun,
			ClientStatus: state.AllocClientStatusPending, CreateTime: w.clock.Add(time.Duration(w.seq)),
		}, task: state.TaskState{State: state.TaskStatePending}}
		w.runners = append(w.runners, f)
		out = append(out, f)
	}
	return out, nil
}

// runningVersions counts running tasks by job version.
func (w *world) runningVersions() map[uint64]int {
	w.mu.Lock()
	runners := slices.Clone(w.runners)
	w.mu.Unlock()
	out := map[uint64]int{}
	for _, f := range runners {
		if f.running() {
			out[f.State().Alloc.JobVersion]++
		}
	}
	return out
}

func newTestReconciler(t *testing.T, w *world) *Reconciler {
	t.Helper()
	r, err := New(Config{Store: w, Factory: w, OnJobEvent: func(jobID, typ, msg string) {
		w.mu.Lock()
		w.events = append(w.events, typ+": "+msg)
		w.mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Shutdown(context.Background()) })
	return r
}

// pass runs one reconcile pass of the job at the world's time and waits
// for the stops it started.
func pass(t *testing.T, r *Reconciler, w *world, jobID string) {
	t.Helper()
	r.jobMu.Lock()
	v, err := r.view(jobID)
	r.jobMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	v.Now = w.now()
	p := Decide(v)
	for _, s := range p.Stops {
		if e := r.entry(s.AllocID); e != nil && !e.stopping {
			w.stops.Add(1)
		}
	}
	r.jobMu.Lock()
	err = r.act(jobID, v, p)
	r.jobMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	w.stops.Wait()
}

func submit(t *testing.T, r *Reconciler, w *world, job *jobspec.Job) {
	t.Helper()
	r.jobMu.Lock()
	_, _, err := r.submitLocked(job)
	r.jobMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	pass(t, r, w, job.ID)
}

// TestBoundedRollout is the sequence found under load: a count-3 job
// submitted again with a new version 50 times, faster than any version
// becomes healthy. At every step at most the stable version's allocations
// and the newest version's run; at the end the newest is healthy and the
// only one running.
func TestBoundedRollout(t *testing.T) {
	for _, slow := range []bool{false, true} {
		t.Run(fmt.Sprintf("slow stops %v", slow), func(t *testing.T) {
			w := newWorld()
			r := newTestReconciler(t, w)
			job := func(i int) *jobspec.Job {
				j := testJob(3)
				j.Meta = map[string]string{"v": fmt.Sprint(i)}
				return j
			}
			submit(t, r, w, job(0))
			w.advance(2 * time.Second)
			pass(t, r, w, "web")
			if js, _ := w.Job("web"); js.Job.LastStable == nil || *js.Job.LastStable != 0 {
				t.Fatalf("version 0 not stable: %+v", js.Job)
			}
			w.slowStop = slow
			for i := 1; i <= 50; i++ {
				submit(t, r, w, job(i))
				if slow && i%2 == 0 {
					// Half the superseded allocations die only a pass later.
					for _, f := range w.runners {
						if f.State().Alloc.DesiredStatus == state.AllocDesiredStatusStop {
							f.end()
						}
					}
					pass(t, r, w, "web")
				}
				total := 0
				for _, n := range w.runningVersions() {
					total += n
				}
				if vs := w.runningVersions(); total > 6 || len(vs) > 2 {
					t.Fatalf("after submission %d: running tasks by version %v, want at most 3 of version 0 and 3 of the newest", i, vs)
				}
				w.advance(200 * time.Millisecond)
			}
			for _, f := range w.runners {
				if f.State().Alloc.DesiredStatus == state.AllocDesiredStatusStop {
					f.end()
				}
			}
			pass(t, r, w, "web")
			w.advance(2 * time.Second)
			pass(t, r, w, "web")
			if vs := w.runningVersions(); len(vs) != 1 || vs[50] != 3 {
				t.Fatalf("at the end: running tasks by version %v, want 3 of version 50 only", vs)
			}
			js, _ := w.Job("web")
			if js.Job.Update == nil || js.Job.Update.Version != 50 || js.Job.Update.Status != state.UpdateSuccessful {
				t.Fatalf("final outcome %+v, want version 50 successful", js.Job.Update)
			}
			superseded := 0
			for _, ev := range w.events {
				if strings.HasPrefix(ev, EventVersionSuperseded) {
					superseded++
				}
			}
			if superseded != 49 {
				t.Errorf("%d superseded events, want 49 (versions 1 to 49): %q", superseded, w.events)
			}
			for _, f := range w.runners {
				v := f.State().Alloc.JobVersion
				if v > 0 && v < 50 && !strings.Contains(f.reason, "superseded by version") {
					t.Errorf("allocation %s of version %d stopped for %q, want superseded", f.ID(), v, f.reason)
				}
			}
		})
	}
}

// TestRevertAfterKill9 is the sequence the chaos test found: the failure
// was recorded, the agent was killed before the revert was submitted; the
// next agent's first pass submits it.
func TestRevertAfterKill9(t *testing.T) {
	w := newWorld()
	r := newTestReconciler(t, w)
	j0 := testJob(1, autoRevert)
	submit(t, r, w, j0)
	w.advance(2 * time.Second)
	pass(t, r, w, "web")
	j1 := testJob(1, autoRevert, func(j *jobspec.Job) { j.Meta = map[string]string{"v": "1"} })
	submit(t, r, w, j1)
	// Recorded as failed, nothing else done: a new reconciler (the next
	// agent) adopts what runs.
	if err := w.FinishUpdate("web", &state.UpdateOutcome{Version: 1, Status: state.UpdateFailed, Description: "x"}); err != nil {
		t.Fatal(err)
	}
	r2 := newTestReconciler(t, w)
	for _, f := range w.runners {
		r2.Adopt(f)
	}
	pass(t, r2, w, "web")
	js, _ := w.Job("web")
	if js.Job.Version != 2 || !jobspec.Equal(js.Spec.Job, j0) {
		t.Fatalf("after the pass: version %d, want 2 with version 0's spec", js.Job.Version)
	}
	for _, f := range w.runners {
		if f.State().Alloc.JobVersion == 1 && f.State().Alloc.DesiredStatus != state.AllocDesiredStatusStop {
			t.Errorf("allocation %s of the failed version still wants to run", f.ID())
		}
	}
}

// TestPurgeForgets: a purge stops, then forgets the allocations and the job,
// and WaitStopped returns once they are gone.
func TestPurgeForgets(t *testing.T) {
	w := newWorld()
	r := newTestReconciler(t, w)
	submit(t, r, w, testJob(2))
	w.mu.Lock()
	w.jobs["web"].Job.Stop, w.jobs["web"].Job.Purge = true, true
	w.mu.Unlock()
	pass(t, r, w, "web") // stops
	pass(t, r, w, "web") // forgets
	if _, err := w.Job("web"); !errors.Is(err, state.ErrJobNotFound) {
		t.Fatalf("job still recorded: %v", err)
	}
	if len(w.destroyed) != 2 || len(r.JobAllocs("web")) != 0 {
		t.Fatalf("destroyed %v, tracked %d", w.destroyed, len(r.JobAllocs("web")))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.WaitStopped(ctx, "web", true); err != nil {
		t.Fatal(err)
	}
}
