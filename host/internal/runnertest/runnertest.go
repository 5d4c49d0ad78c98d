// Package runnertest is the test harness the taskrunner and supervisor tests
// share: one incarnation of the agent's runner side with real parts (a bbolt
// store, a process watcher, the builtin drivers, real processes and sockets)
// and an event log that tests wait on.
//
// It does not import taskrunner: taskrunner's own tests are in the package
// (they use its restart tracker and snapshots), so a harness that imported
// it would be an import cycle. The runners and their configuration are
// type parameters instead, and each package's harness_test.go wraps an
// Agent with what only it has (supervisor: the registry and the supervisor
// hook) and the restart that builds its next incarnation.
package runnertest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/sdk"
	"golang.org/x/sys/unix"
)

// Runner is what the harness does with an allocation runner
// (*taskrunner.AllocRunner).
type Runner interface {
	Run()
	Stop(ctx context.Context) error
	Shutdown(ctx context.Context) error
	Destroy(ctx context.Context) error
	SocketDir() string
}

// Agent is one incarnation of the agent's runner side. Close drops it
// without stopping tasks, as a kill -9 would; the next incarnation is a new
// Agent on the same DataDir that calls RestoreAll. C is the runners'
// configuration (*taskrunner.Config), R the runner.
type Agent[C any, R Runner] struct {
	T       testing.TB
	DataDir string
	DB      *state.DB
	Watcher *driver.Watcher
	Drivers map[string]driver.Driver
	// Logger writes warnings and errors to the test's log.
	Logger hclog.Logger
	Events *EventLog
	// Cfg is what Run and RestoreAll hand the runners: the package's
	// harness sets it, a test may change it.
	Cfg     C
	Runners []R

	newRunner     func(C, *jobspec.Job, string, int) (R, error)
	restoreRunner func(C, *state.AllocState) (R, error)
	atClose       []func()
}

// New opens the store in dataDir, a watcher and the builtin drivers (the
// go_plugin driver with the sdk's handshake). newRunner and restoreRunner
// are taskrunner.NewAllocRunner and taskrunner.RestoreAllocRunner. Every
// allocation still running when the test ends is destroyed then.
func New[C any, R Runner](t testing.TB, dataDir string,
	newRunner func(C, *jobspec.Job, string, int) (R, error),
	restoreRunner func(C, *state.AllocState) (R, error),
) *Agent[C, R] {
	t.Helper()
	db, err := state.Open(filepath.Join(dataDir, "state.db"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent[C, R]{
		T: t, DataDir: dataDir, DB: db, Logger: Logger(t), Events: NewEventLog(),
		newRunner: newRunner, restoreRunner: restoreRunner,
	}
	t.Cleanup(a.final)
	if a.Watcher, err = driver.NewWatcher(); err != nil {
		t.Fatal(err)
	}
	a.Drivers, err = driver.Builtin(a.Watcher, &driver.GoPluginConfig{
		Handshake: sdk.Handshake(), PluginSets: sdk.HostPlugins(), Dispense: sdk.PluginCSI,
	}, driver.ExecOptions{Seccomp: true})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// AtClose has Close call f once, after the runners let go and before the
// store closes (supervisor: the registry's shutdown).
func (a *Agent[C, R]) AtClose(f func()) { a.atClose = append(a.atClose, f) }

// Run starts a runner of the job's first group.
func (a *Agent[C, R]) Run(job *jobspec.Job) R {
	a.T.Helper()
	r, err := a.newRunner(a.Cfg, job, job.TaskGroups[0].Name, 0)
	if err != nil {
		a.T.Fatal(err)
	}
	a.Runners = append(a.Runners, r)
	r.Run()
	return r
}

// Stop stops the runner's allocation and fails the test if that fails.
func (a *Agent[C, R]) Stop(r R) {
	a.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.Stop(ctx); err != nil {
		a.T.Fatal(err)
	}
}

// RestoreAll restores every stored allocation and runs it: what a new
// incarnation does first.
func (a *Agent[C, R]) RestoreAll() {
	a.T.Helper()
	states, err := a.DB.LoadAllocs()
	if err != nil {
		a.T.Fatal(err)
	}
	for _, as := range states {
		r, err := a.restoreRunner(a.Cfg, as)
		if err != nil {
			a.T.Fatal(err)
		}
		a.Runners = append(a.Runners, r)
		r.Run()
	}
}

// Close is the incarnation's end: runners let go, tasks keep running. The
// socket dirs of allocations that no later incarnation destroys (a test
// that ends with the agent down) are removed when the test ends: for a
// long t.TempDir they lie outside it, under the short fallback root.
func (a *Agent[C, R]) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, r := range a.Runners {
		_ = r.Shutdown(ctx)
		dir := r.SocketDir()
		a.T.Cleanup(func() {
			_ = os.RemoveAll(dir)
			_ = os.Remove(filepath.Dir(dir)) // the root, if nothing else uses it
		})
	}
	a.Runners = nil
	for _, f := range a.atClose {
		f()
	}
	a.atClose = nil
	if a.Watcher != nil {
		_ = a.Watcher.Close()
		a.Watcher = nil
	}
	if a.DB != nil {
		_ = a.DB.Close()
		a.DB = nil
	}
}

// final destroys every allocation this incarnation still runs, killing
// their tasks and removing their directories, so that no test leaves
// processes or socket directories behind even when it fails.
func (a *Agent[C, R]) final() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, r := range a.Runners {
		// Destroy also removes the socket dir, which for a long data dir
		// lies outside it (the short fallback root); its root goes too if
		// nothing else uses it.
		if err := r.Destroy(ctx); err != nil {
			a.T.Errorf("cleanup: %v", err)
		}
		_ = os.Remove(filepath.Dir(r.SocketDir()))
	}
	a.Close()
}

// KillAtCleanup kills the task's process group and its log shipper when
// the test ends, whatever happens.
func KillAtCleanup(t testing.TB, h *state.TaskHandle) {
	t.Cleanup(func() {
		_ = unix.Kill(-h.Pid, syscall.SIGCONT)
		_ = unix.Kill(-h.Pid, syscall.SIGKILL)
		if h.LogmonPid > 0 && Alive(h.LogmonPid, h.LogmonStartTime) {
			_ = unix.Kill(h.LogmonPid, syscall.SIGKILL)
		}
	})
}

// Alive reports whether pid runs with the given start time.
func Alive(pid int, start uint64) bool {
	st, err := driver.ProcStartTime(pid)
	return err == nil && st == start
}

// Logger is a logger of warnings and errors into the test's log.
func Logger(t testing.TB) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: testWriter{t}})
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
