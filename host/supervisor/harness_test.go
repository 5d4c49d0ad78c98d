package supervisor

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/internal/runnertest"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// agent is one incarnation of the agent's runner side (see runnertest),
// its events recorded under the allocation's ID, with a registry persisted
// in its store and the supervisor hook. restart() drops it without
// stopping tasks and builds the next incarnation on the same data dir, as a
// kill -9 and restart would.
type agent struct {
	*runnertest.Agent[*taskrunner.Config, *taskrunner.AllocRunner]
	opts   agentOpts
	reg    *dynamic.Registry
	health *HealthTable
}

type agentOpts struct {
	probeInterval time.Duration
	probeTimeout  time.Duration
	// store wraps the registry's store, to inject a failure.
	store func(dynamic.Store) dynamic.Store
	// conns is lent the go-plugin connections (Config.Conns).
	conns ConnLender
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
	a := &agent{
		Agent: runnertest.New(t, dataDir, taskrunner.NewAllocRunner, taskrunner.RestoreAllocRunner),
		opts:  opts, health: NewHealthTable(),
	}
	var store dynamic.Store = a.DB
	if opts.store != nil {
		store = opts.store(a.DB)
	}
	reg, err := dynamic.New(dynamic.Config{Store: store, Logger: a.Logger})
	if err != nil {
		t.Fatal(err)
	}
	a.reg = reg
	a.AtClose(reg.Shutdown)
	hooks, err := NewHook(Config{
		Registry: reg, MountRoot: filepath.Join(dataDir, "csi"), Logger: a.Logger,
		ProbeInterval: opts.probeInterval, ProbeTimeout: opts.probeTimeout,
		Conns: opts.conns, Health: a.health,
	})
	if err != nil {
		t.Fatal(err)
	}
	a.Cfg = &taskrunner.Config{
		DataDir: dataDir, Store: a.DB, Drivers: a.Drivers, LogmonCommand: []string{logmonBin},
		ExtraHooks: hooks,
		OnEvent:    func(alloc, _ string, ev *state.TaskEvent) { a.Events.Add(alloc, ev) },
		NodeName:   "node1", Datacenter: "dc1",
		Rand:   func(int64) int64 { return 0 },
		Logger: a.Logger,
	}
	return a
}

// restart ends this incarnation and returns the next one, its registry
// restored from the store; before restored allocations run, before is
// called with the new agent (to subscribe to its registry, say).
func (a *agent) restart(before func(b *agent)) *agent {
	a.T.Helper()
	a.Close()
	b := newAgent(a.T, a.DataDir, a.opts)
	if before != nil {
		before(b)
	}
	b.RestoreAll()
	return b
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
	runnertest.KillAtCleanup(t, h)
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
	ar := a.Run(pluginJob("csi", drv, typ, nil))
	a.Events.Wait(t, ar.ID(), EventPluginHealthy, 1)
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
