package taskrunner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/internal/testproc"
	"github.com/pluginhost/pluginhost/sdk"
	"golang.org/x/sys/unix"
)

// agent is one incarnation of the agent's runner side: a store, drivers
// and a watcher. restart() drops it without stopping tasks and builds the
// next incarnation on the same data dir, as a kill -9 and restart would.
type agent struct {
	t       testing.TB
	dataDir string
	db      *state.DB
	watcher *driver.Watcher
	cfg     *Config
	ev      *eventLog
	runners []*AllocRunner
}

type eventLog struct {
	mu     sync.Mutex
	events []string // "task/Type"
	all    []*state.TaskEvent
	notify chan struct{}
}

func (l *eventLog) add(task string, ev *state.TaskEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, task+"/"+ev.Type)
	l.all = append(l.all, ev)
	close(l.notify)
	l.notify = make(chan struct{})
}

func (l *eventLog) count(task, typ string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.events {
		if e == task+"/"+typ {
			n++
		}
	}
	return n
}

func (l *eventLog) last(task, typ string) *state.TaskEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.events) - 1; i >= 0; i-- {
		if l.events[i] == task+"/"+typ {
			return l.all[i]
		}
	}
	return nil
}

// wait blocks until task has had n events of typ: an event, not a sleep.
func (l *eventLog) wait(t testing.TB, task, typ string, n int) *state.TaskEvent {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		l.mu.Lock()
		ch := l.notify
		l.mu.Unlock()
		if l.count(task, typ) >= n {
			return l.last(task, typ)
		}
		select {
		case <-ch:
		case <-deadline:
			l.mu.Lock()
			defer l.mu.Unlock()
			t.Fatalf("no %d×%q for %s; events: %v", n, typ, task, l.events)
		}
	}
}

func newAgent(t testing.TB, dataDir string) *agent {
	t.Helper()
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	db, err := state.Open(filepath.Join(dataDir, "state.db"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := driver.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	drivers, err := driver.Builtin(w, &driver.GoPluginConfig{
		Handshake: sdk.Handshake(), PluginSets: sdk.HostPlugins(), Dispense: sdk.PluginCSI,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := &agent{t: t, dataDir: dataDir, db: db, watcher: w, ev: &eventLog{notify: make(chan struct{})}}
	a.cfg = &Config{
		DataDir: dataDir, Store: db, Drivers: drivers, LogmonCommand: []string{logmonBin},
		OnEvent:  func(_, task string, ev *state.TaskEvent) { a.ev.add(task, ev) },
		NodeName: "node1", Datacenter: "dc1",
		Rand:   noJitter,
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: testWriter{t}}),
	}
	t.Cleanup(a.final)
	return a
}

// final stops every allocation this incarnation still runs (killing their
// tasks), so that no test leaves processes behind.
func (a *agent) final() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, ar := range a.runners {
		// Destroy also removes the socket dir, which for a long t.TempDir
		// lies outside it (the short fallback root); its root goes too
		// if nothing else uses it.
		if err := ar.Destroy(ctx); err != nil {
			a.t.Errorf("cleanup: %v", err)
		}
		_ = os.Remove(filepath.Dir(ar.SocketDir()))
	}
	a.close()
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// close is the incarnation's end: runners let go, tasks keep running. The
// socket dirs of allocations that no later incarnation destroys (a test
// that ends with the agent down) are removed when the test ends: for a
// long t.TempDir they lie outside it, under the short fallback root.
func (a *agent) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, ar := range a.runners {
		_ = ar.Shutdown(ctx)
		dir := ar.SocketDir()
		a.t.Cleanup(func() {
			_ = os.RemoveAll(dir)
			_ = os.Remove(filepath.Dir(dir)) // the root, if nothing else uses it
		})
	}
	a.runners = nil
	if a.watcher != nil {
		_ = a.watcher.Close()
		a.watcher = nil
	}
	if a.db != nil {
		_ = a.db.Close()
		a.db = nil
	}
}

// restart ends this incarnation and returns the next one with every
// stored allocation restored and running.
func (a *agent) restart() *agent { return a.restartWith(nil) }

// restartWith is restart with a change to the new incarnation's Config
// (hooks, say) made before anything is restored.
func (a *agent) restartWith(change func(*Config)) *agent {
	a.t.Helper()
	a.close()
	b := newAgent(a.t, a.dataDir)
	if change != nil {
		change(b.cfg)
	}
	states, err := b.db.LoadAllocs()
	if err != nil {
		a.t.Fatal(err)
	}
	for _, as := range states {
		ar, err := RestoreAllocRunner(b.cfg, as)
		if err != nil {
			a.t.Fatal(err)
		}
		b.runners = append(b.runners, ar)
		ar.Run()
	}
	return b
}

func (a *agent) run(job *jobspec.Job) *AllocRunner {
	a.t.Helper()
	ar, err := NewAllocRunner(a.cfg, job, job.TaskGroups[0].Name, 0)
	if err != nil {
		a.t.Fatal(err)
	}
	a.runners = append(a.runners, ar)
	ar.Run()
	return ar
}

func (a *agent) stop(ar *AllocRunner) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := ar.Stop(ctx); err != nil {
		a.t.Fatal(err)
	}
}

// handle returns the running task's handle and kills its process group
// (and its log shipper) when the test ends, whatever happens.
func handle(t testing.TB, ar *AllocRunner, task string) *state.TaskHandle {
	t.Helper()
	s := ar.Task(task).snapshot()
	if s.Handle == nil {
		t.Fatalf("task %s has no handle (state %+v)", task, s.State)
	}
	h := s.Handle
	t.Cleanup(func() {
		_ = unix.Kill(-h.Pid, syscall.SIGKILL)
		if h.LogmonPid > 0 {
			if st, err := driver.ProcStartTime(h.LogmonPid); err == nil && st == h.LogmonStartTime {
				_ = unix.Kill(h.LogmonPid, syscall.SIGKILL)
			}
		}
	})
	return h
}

func testJob(typ string, tasks ...*jobspec.Task) *jobspec.Job {
	return &jobspec.Job{
		ID: "web", Name: "web", Type: typ, Datacenters: []string{"dc1"},
		Meta: map[string]string{"owner": "ops"},
		TaskGroups: []*jobspec.TaskGroup{{
			Name: "g", Count: 1,
			Restart: &jobspec.RestartPolicy{Attempts: 2, Interval: time.Minute, Delay: 10 * time.Millisecond, Mode: jobspec.RestartModeFail},
			Tasks:   tasks,
		}},
	}
}

func rawTask(name string, args ...string) *jobspec.Task {
	return &jobspec.Task{
		Name: name, Driver: jobspec.DriverRawExec,
		Config:      &jobspec.TaskConfig{Command: testTask, Args: args},
		KillTimeout: 5 * time.Second, KillSignal: "SIGTERM",
		Logs: &jobspec.LogConfig{MaxFiles: 3, MaxFileSizeMB: 1},
	}
}

// alive reports whether pid runs with the given start time.
func alive(pid int, start uint64) bool {
	st, err := driver.ProcStartTime(pid)
	return err == nil && st == start
}

// waitGone waits on a pidfd for pid to exit.
func waitGone(t testing.TB, pid int) { testproc.WaitGone(t, pid, 30*time.Second) }
