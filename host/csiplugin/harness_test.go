package csiplugin

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
	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/host/taskrunner"
	"github.com/pluginhost/pluginhost/sdk"
	"golang.org/x/sys/unix"
)

// agent is one incarnation of the agent's runner side, with real parts: a
// bbolt store, a registry persisted in it, drivers, a pid watcher and the
// supervisor hook. restart() drops it without stopping tasks and builds the
// next incarnation on the same data dir, as a kill -9 and restart would.
type agent struct {
	t       testing.TB
	dataDir string
	opts    agentOpts
	db      *state.DB
	reg     *dynamic.Registry
	health  *HealthTable
	watcher *driver.Watcher
	cfg     *taskrunner.Config
	ev      *eventLog
	runners []*taskrunner.AllocRunner
}

type agentOpts struct {
	probeInterval time.Duration
	probeTimeout  time.Duration
	// store wraps the registry's store, to inject a failure.
	store func(dynamic.Store) dynamic.Store
	// conns is lent the go-plugin connections (Config.Conns).
	conns ConnLender
}

type eventLog struct {
	mu     sync.Mutex
	all    []taskEvent
	notify chan struct{}
}

type taskEvent struct {
	alloc, task string
	ev          *state.TaskEvent
}

func (l *eventLog) add(alloc, task string, ev *state.TaskEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, taskEvent{alloc, task, ev})
	close(l.notify)
	l.notify = make(chan struct{})
}

// matching returns the events of alloc ("" for any) with type typ.
func (l *eventLog) matching(alloc, typ string) []*state.TaskEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*state.TaskEvent
	for _, e := range l.all {
		if (alloc == "" || e.alloc == alloc) && e.ev.Type == typ {
			out = append(out, e.ev)
		}
	}
	return out
}

func (l *eventLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, e := range l.all {
		b.WriteString("\n  " + e.alloc[:8] + " " + e.ev.Type + ": " + e.ev.Message)
	}
	return b.String()
}

// wait blocks until alloc has had n events of typ and returns the nth: it
// wakes on events, never on a timer (the deadline only bounds a failure).
func (l *eventLog) wait(t testing.TB, alloc, typ string, n int) *state.TaskEvent {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		ch := l.notify
		l.mu.Unlock()
		if evs := l.matching(alloc, typ); len(evs) >= n {
			return evs[n-1]
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("no %d×%q for alloc %s; events:%s", n, typ, alloc, l)
		}
	}
}

func newAgent(t testing.TB, dataDir string, opts agentOpts) *agent {
	t.Helper()
	if dataDir == "" {
		// Short, so that the allocation socket dirs go under
		// <data_dir>/sockets (t.TempDir's names are long enough to force
		// the fallback, which TestLongDataDir covers).
		d, err := os.MkdirTemp("", "csip")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(d) })
		dataDir = d
	}
	db, err := state.Open(filepath.Join(dataDir, "state.db"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: testWriter{t}})
	var store dynamic.Store = db
	if opts.store != nil {
		store = opts.store(db)
	}
	reg, err := dynamic.New(dynamic.Config{Store: store, Logger: logger})
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
	health := NewHealthTable()
	hooks, err := NewHook(Config{
		Registry: reg, MountRoot: filepath.Join(dataDir, "csi"), Logger: logger,
		ProbeInterval: opts.probeInterval, ProbeTimeout: opts.probeTimeout,
		Conns: opts.conns, Health: health,
	})
	if err != nil {
		t.Fatal(err)
	}
	a := &agent{t: t, dataDir: dataDir, opts: opts, db: db, reg: reg, health: health, watcher: w, ev: &eventLog{notify: make(chan struct{})}}
	a.cfg = &taskrunner.Config{
		DataDir: dataDir, Store: db, Drivers: drivers, LogmonCommand: []string{logmonBin},
		ExtraHooks: hooks,
		OnEvent:    func(alloc, task string, ev *state.TaskEvent) { a.ev.add(alloc, task, ev) },
		NodeName:   "node1", Datacenter: "dc1",
		Rand:   func(int64) int64 { return 0 },
		Logger: logger,
	}
	t.Cleanup(a.final)
	return a
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// final destroys every allocation this incarnation still runs, killing
// their tasks and removing their directories, so that no test leaves
// processes or socket directories (which may live outside the test's temp
// dir, under the short fallback root) behind even when it fails.
func (a *agent) final() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, ar := range a.runners {
		if err := ar.Destroy(ctx); err != nil {
			a.t.Errorf("cleanup: %v", err)
		}
		_ = os.Remove(filepath.Dir(ar.SocketDir()))
	}
	a.close()
}

// close ends the incarnation: runners let go, tasks keep running.
func (a *agent) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, ar := range a.runners {
		_ = ar.Shutdown(ctx)
	}
	a.runners = nil
	if a.reg != nil {
		a.reg.Shutdown()
		a.reg = nil
	}
	if a.watcher != nil {
		_ = a.watcher.Close()
		a.watcher = nil
	}
	if a.db != nil {
		_ = a.db.Close()
		a.db = nil
	}
}

// restart ends this incarnation and returns the next one, its registry
// restored from the store; before restored allocations run, before is
// called with the new agent (to subscribe to its registry, say).
func (a *agent) restart(before func(b *agent)) *agent {
	a.t.Helper()
	a.close()
	b := newAgent(a.t, a.dataDir, a.opts)
	states, err := b.db.LoadAllocs()
	if err != nil {
		a.t.Fatal(err)
	}
	if before != nil {
		before(b)
	}
	for _, as := range states {
		ar, err := taskrunner.RestoreAllocRunner(b.cfg, as)
		if err != nil {
			a.t.Fatal(err)
		}
		b.runners = append(b.runners, ar)
		ar.Run()
	}
	return b
}

func (a *agent) run(job *jobspec.Job) *taskrunner.AllocRunner {
	a.t.Helper()
	ar, err := taskrunner.NewAllocRunner(a.cfg, job, job.TaskGroups[0].Name, 0)
	if err != nil {
		a.t.Fatal(err)
	}
	a.runners = append(a.runners, ar)
	ar.Run()
	return ar
}

func (a *agent) stop(ar *taskrunner.AllocRunner) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := ar.Stop(ctx); err != nil {
		a.t.Fatal(err)
	}
}

// handle returns the task's stored handle and kills its process group and
// log shipper when the test ends, whatever happens.
func handle(t testing.TB, ar *taskrunner.AllocRunner, task string) *state.TaskHandle {
	t.Helper()
	var h *state.TaskHandle
	for _, ts := range ar.State().Tasks {
		if ts.Name == task {
			h = ts.Handle
		}
	}
	if h == nil {
		t.Fatalf("task %s has no handle", task)
	}
	t.Cleanup(func() {
		_ = unix.Kill(-h.Pid, syscall.SIGCONT)
		_ = unix.Kill(-h.Pid, syscall.SIGKILL)
		if h.LogmonPid > 0 {
			if st, err := driver.ProcStartTime(h.LogmonPid); err == nil && st == h.LogmonStartTime {
				_ = unix.Kill(h.LogmonPid, syscall.SIGKILL)
			}
		}
	})
	return h
}

// pluginJob is a service job with one mockcsi task of the given driver
// and csi_plugin type. env adds fault injection.
// eachDriver runs f as a parallel subtest for each driver.
func eachDriver(t *testing.T, f func(t *testing.T, drv string)) {
	for _, drv := range drivers {
		t.Run(drv, func(t *testing.T) {
			t.Parallel()
			f(t, drv)
		})
	}
}

// healthyPlugin starts an agent with opts, runs mockcsi under drv as a
// csi_plugin of type typ, and waits until it is healthy.
func healthyPlugin(t *testing.T, drv, typ string, opts agentOpts) (*agent, *taskrunner.AllocRunner) {
	t.Helper()
	a := newAgent(t, "", opts)
	ar := a.run(pluginJob("csi", drv, typ, nil))
	a.ev.wait(t, ar.ID(), EventPluginHealthy, 1)
	return a, ar
}

func pluginJob(id, drv, typ string, env map[string]string, args ...string) *jobspec.Job {
	return &jobspec.Job{
		ID: id, Name: id, Type: jobspec.JobTypeService, Datacenters: []string{"dc1"},
		TaskGroups: []*jobspec.TaskGroup{{
			Name: "g", Count: 1,
			Restart: &jobspec.RestartPolicy{Attempts: 2, Interval: time.Minute, Delay: 10 * time.Millisecond, Mode: jobspec.RestartModeFail},
			Tasks: []*jobspec.Task{{
				Name: "plugin", Driver: drv,
				Config:      &jobspec.TaskConfig{Command: mockcsiBin, Args: args},
				Env:         env,
				KillTimeout: 5 * time.Second, KillSignal: "SIGTERM",
				Logs: &jobspec.LogConfig{MaxFiles: 2, MaxFileSizeMB: 1},
				CSIPluginConfig: &jobspec.TaskCSIPluginConfig{
					ID: "hostpath", Type: typ, MountDir: jobspec.DefaultCSIMountDir,
					StagePublishBaseDir: jobspec.DefaultCSIMountDir, HealthTimeout: 10 * time.Second,
				},
			}},
		}},
	}
}

// noRestarts makes the job's task fail for good at its first exit.
func noRestarts(j *jobspec.Job) *jobspec.Job {
	j.TaskGroups[0].Restart.Attempts = 0
	return j
}

func csiTask(j *jobspec.Job) *jobspec.Task { return j.TaskGroups[0].Tasks[0] }

// registered returns the registry's info for the allocation, failing the
// test if it is missing.
func registered(t testing.TB, reg *dynamic.Registry, typ, allocID string) *dynamic.PluginInfo {
	t.Helper()
	p, ok := reg.ForAlloc(typ, "hostpath", allocID)
	if !ok {
		t.Fatalf("%s hostpath of alloc %s is not registered; registry: %v", typ, allocID, reg.ListAllocs(typ))
	}
	return p
}

func notRegistered(t testing.TB, reg *dynamic.Registry, typ, allocID string) {
	t.Helper()
	if p, ok := reg.ForAlloc(typ, "hostpath", allocID); ok {
		t.Fatalf("%s hostpath of alloc %s is still registered: %+v", typ, allocID, p)
	}
}

var drivers = []string{jobspec.DriverRawExec, jobspec.DriverGoPlugin}
