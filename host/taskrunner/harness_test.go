package taskrunner

import (
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/host/internal/runnertest"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/internal/testproc"
)

// agent is one incarnation of the agent's runner side (see runnertest),
// its events recorded under the task's name. restart() drops it without
// stopping tasks and builds the next incarnation on the same data dir, as a
// kill -9 and restart would.
type agent struct {
	*runnertest.Agent[*Config, *AllocRunner]
}

func newAgent(t testing.TB, dataDir string) *agent {
	t.Helper()
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	a := &agent{runnertest.New(t, dataDir, NewAllocRunner, RestoreAllocRunner)}
	a.Cfg = &Config{
		DataDir: dataDir, Store: a.DB, Drivers: a.Drivers, LogmonCommand: []string{logmonBin},
		OnEvent:  func(_, task string, ev *state.TaskEvent) { a.Events.Add(task, ev) },
		NodeName: "node1", Datacenter: "dc1",
		Rand:   noJitter,
		Logger: a.Logger,
	}
	return a
}

// restart ends this incarnation and returns the next one with every
// stored allocation restored and running.
func (a *agent) restart() *agent { return a.restartWith(nil) }

// restartWith is restart with a change to the new incarnation's Config
// (hooks, say) made before anything is restored.
func (a *agent) restartWith(change func(*Config)) *agent {
	a.T.Helper()
	a.Close()
	b := newAgent(a.T, a.DataDir)
	if change != nil {
		change(b.Cfg)
	}
	b.RestoreAll()
	return b
}

// handle returns the running task's handle and kills its process group
// (and its log shipper) when the test ends, whatever happens.
func handle(t testing.TB, ar *AllocRunner, task string) *state.TaskHandle {
	t.Helper()
	s := ar.Task(task).snapshot()
	if s.Handle == nil {
		t.Fatalf("task %s has no handle (state %+v)", task, s.State)
	}
	runnertest.KillAtCleanup(t, s.Handle)
	return s.Handle
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

// waitGone waits on a pidfd for pid to exit.
func waitGone(t testing.TB, pid int) { testproc.WaitGone(t, pid, 30*time.Second) }
