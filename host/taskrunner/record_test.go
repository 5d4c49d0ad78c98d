package taskrunner

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/state"
)

// countingStore is the real store, counting commits.
type countingStore struct {
	*state.DB
	commits atomic.Int64
}

func (s *countingStore) Update(fn func(tx *state.Tx) error) error {
	s.commits.Add(1)
	return s.DB.Update(fn)
}

// TestLaunchIsTwoCommits: from NewAllocRunner to Started a task costs two
// commits (the allocation with Received; the launch), and when Started is
// announced its handle is already in the store, with the running state,
// the allocation's running status, and the informational Task Setup event
// that rode along, in emission order.
func TestLaunchIsTwoCommits(t *testing.T) {
	a := newAgent(t, "")
	store := &countingStore{DB: a.DB}
	a.Cfg.Store = store
	type seen struct {
		commits int64
		rec     *state.AllocState
		err     error
	}
	var (
		once sync.Once
		at   = make(chan seen, 1)
	)
	prev := a.Cfg.OnEvent
	a.Cfg.OnEvent = func(allocID, task string, ev *state.TaskEvent) {
		prev(allocID, task, ev)
		if ev.Type != EventStarted {
			return
		}
		once.Do(func() {
			s := seen{commits: store.commits.Load()}
			all, err := a.DB.LoadAllocs()
			s.err = err
			for _, as := range all {
				if as.Alloc.ID == allocID {
					s.rec = as
				}
			}
			at <- s
		})
	}
	ar := a.Run(testJob(jobspec.JobTypeService, rawTask("web", "sleep")))
	a.Events.Wait(t, "web", EventStarted, 1)
	h := handle(t, ar, "web")
	s := <-at
	if s.err != nil || s.rec == nil {
		t.Fatalf("load at Started: %v (record %v)", s.err, s.rec)
	}
	if s.commits != 2 {
		t.Errorf("%d commits up to Started, want 2", s.commits)
	}
	rec := s.rec.Tasks["web"]
	if rec == nil || rec.Handle == nil || rec.Handle.Pid != h.Pid || rec.Handle.StartTime != h.StartTime || rec.Handle.LogmonPid != h.LogmonPid {
		t.Fatalf("stored handle at Started %+v, runner has %+v", rec, h)
	}
	if rec.State == nil || rec.State.State != state.TaskStateRunning || rec.State.StartedAt.IsZero() {
		t.Errorf("stored state at Started %+v", rec.State)
	}
	if s.rec.Alloc.ClientStatus != state.AllocClientStatusRunning {
		t.Errorf("stored alloc status at Started %q", s.rec.Alloc.ClientStatus)
	}
	var types []string
	for _, ev := range rec.Events {
		types = append(types, ev.Type)
	}
	if want := []string{EventReceived, EventTaskSetup, EventStarted}; len(types) != len(want) || types[0] != want[0] || types[1] != want[1] || types[2] != want[2] {
		t.Errorf("stored events %v, want %v", types, want)
	}
}

// TestSetupFailureStoresTaskSetup: an informational event is not lost when
// the launch fails before anything else was written: it goes with the
// failure's commit.
func TestSetupFailureStoresTaskSetup(t *testing.T) {
	a := newAgent(t, "")
	task := rawTask("web", "sleep")
	task.Config.Command = "/nonexistent/pluginhost-task"
	job := testJob(jobspec.JobTypeService, task)
	job.TaskGroups[0].Restart.Attempts = 0
	ar := a.Run(job)
	<-ar.Done()
	stored, err := a.DB.LoadAllocs()
	if err != nil {
		t.Fatal(err)
	}
	var evs []*state.TaskEvent
	for _, as := range stored {
		if as.Alloc.ID == ar.ID() && as.Tasks["web"] != nil {
			evs = as.Tasks["web"].Events
		}
	}
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	if len(types) < 3 || types[0] != EventReceived || types[1] != EventTaskSetup || types[2] != EventDriverFailure {
		t.Fatalf("stored events %v, want Received, Task Setup, Driver Failure first", types)
	}
}

// TestFailedLogShipperRestartsTask: the shipper's readiness is checked
// after the launch; a shipper that never came up means a task writing into
// a pipe nobody reads, so the task is restarted, with the reason.
func TestFailedLogShipperRestartsTask(t *testing.T) {
	a := newAgent(t, "")
	// A "shipper" that exits without answering on its readiness pipe.
	a.Cfg.LogmonCommand = []string{"/bin/sh", "-c", "exit 3", "logmon"}
	// A task that writes nothing: one that printed at start would die of
	// SIGPIPE on the readerless pipe, racing the runner's check.
	a.Run(testJob(jobspec.JobTypeService, rawTask("web", "quiet")))
	ev := a.Events.Wait(t, "web", EventRestartSignal, 1)
	if !strings.Contains(ev.Message, "log shipper failed") {
		t.Fatalf("restart reason %q, want the log shipper's failure", ev.Message)
	}
	a.Events.Wait(t, "web", EventKilled, 1)
	if n := a.Events.Count("web", EventStarted); n < 1 {
		t.Fatalf("%d Started events before the restart", n)
	}
}
