package taskrunner

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/host/internal/runnertest"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/state"
)

// waitFile polls for a file the task writes: there is no event for it.
func waitFile(t *testing.T, path string) []byte {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not written: %v", path, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRunLayoutEnvAndStop(t *testing.T) {
	t.Setenv("PLUGINHOST_AGENT_SECRET", "leak")
	a := newAgent(t, "")
	task := rawTask("web", "env", "${NOMAD_TASK_DIR}/env.txt")
	task.Env = map[string]string{"GREETING": "hi-${NOMAD_ALLOC_ID}", "NODE": "${node.unique.name}"}
	task.Meta = map[string]string{"tier": "front"}
	ar := a.Run(testJob(jobspec.JobTypeService, task))
	a.Events.Wait(t, "web", EventStarted, 1)
	h := handle(t, ar, "web")

	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(ar.ID()) {
		t.Fatalf("alloc id %q is not a UUID v4", ar.ID())
	}
	allocDir := filepath.Join(a.DataDir, "alloc", ar.ID())
	for _, d := range []string{"alloc", "alloc/logs", "web/local", "web/secrets"} {
		if fi, err := os.Stat(filepath.Join(allocDir, d)); err != nil || !fi.IsDir() {
			t.Fatalf("missing %s: %v", d, err)
		}
	}
	if fi, _ := os.Stat(filepath.Join(allocDir, "web/secrets")); fi.Mode().Perm() != 0o700 {
		t.Fatalf("secrets dir mode %v", fi.Mode().Perm())
	}
	// The allocation's socket directory is passed through (0711), the
	// task's own is its alone (0700).
	if fi, err := os.Stat(ar.SocketDir()); err != nil || fi.Mode().Perm() != 0o711 {
		t.Fatalf("socket dir %s: %v (%v)", ar.SocketDir(), fi.Mode(), err)
	}
	if fi, err := os.Stat(TaskSocketDir(ar.SocketDir(), 0)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("task socket dir: %v (%v)", fi.Mode(), err)
	}

	env := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSpace(string(waitFile(t, filepath.Join(allocDir, "web/local/env.txt")))), "\n") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	want := map[string]string{
		"PATH": DefaultPath, "NOMAD_ALLOC_ID": ar.ID(), "NOMAD_TASK_NAME": "web", "NOMAD_GROUP_NAME": "g",
		"NOMAD_JOB_ID": "web", "NOMAD_ALLOC_INDEX": "0", "NOMAD_ALLOC_NAME": "web.g[0]", "NOMAD_DC": "dc1",
		"NOMAD_TASK_DIR": filepath.Join(allocDir, "web/local"), "NOMAD_ALLOC_DIR": filepath.Join(allocDir, "alloc"),
		"NOMAD_SECRETS_DIR": filepath.Join(allocDir, "web/secrets"), "NOMAD_META_owner": "ops", "NOMAD_META_TIER": "front",
		"GREETING": "hi-" + ar.ID(), "NODE": "node1",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("env %s = %q, want %q", k, env[k], v)
		}
	}
	if _, ok := env["PLUGINHOST_AGENT_SECRET"]; ok {
		t.Error("the agent's environment leaked into the task")
	}
	if sid, _ := syscall.Getpgid(h.Pid); sid != h.Pid {
		t.Errorf("task pgid %d, want its own group %d", sid, h.Pid)
	}

	a.Stop(ar)
	waitGone(t, h.Pid)
	for _, typ := range []string{EventReceived, EventTaskSetup, EventStarted, EventKilling, EventKilled} {
		if a.Events.Count("web", typ) == 0 {
			t.Errorf("no %q event", typ)
		}
	}
	s := ar.State()
	if s.Tasks[0].State.State != state.TaskStateDead || s.Tasks[0].Handle != nil {
		t.Fatalf("after stop: %+v", s.Tasks[0])
	}
	if s.Alloc.DesiredStatus != state.AllocDesiredStatusStop || s.Alloc.ClientStatus != state.AllocClientStatusComplete {
		t.Fatalf("alloc status %s/%s", s.Alloc.DesiredStatus, s.Alloc.ClientStatus)
	}
}

func TestRestartPolicyFailMode(t *testing.T) {
	a := newAgent(t, "")
	ar := a.Run(testJob(jobspec.JobTypeService, rawTask("crash", "exit", "3")))
	a.Events.Wait(t, "crash", EventNotRestarting, 1)
	<-ar.Done()
	if n := a.Events.Count("crash", EventStarted); n != 3 {
		t.Errorf("%d starts, want 3 (1 + 2 attempts)", n)
	}
	if n := a.Events.Count("crash", EventRestarting); n != 2 {
		t.Errorf("%d restarts, want 2", n)
	}
	if ev := a.Events.Last("crash", EventTerminated); ev.ExitCode != 3 || ev.Message != "Exit Code: 3" {
		t.Errorf("terminated event %+v", ev)
	}
	if ev := a.Events.Last("crash", EventRestarting); ev.Details["restart_delay"] != "10ms" {
		t.Errorf("second restart delay %q, want 10ms (the same every attempt, as in Nomad)", ev.Details["restart_delay"])
	}
	s := ar.State()
	if !s.Tasks[0].State.Failed || s.Tasks[0].State.Restarts != 2 || s.Alloc.ClientStatus != state.AllocClientStatusFailed {
		t.Fatalf("state %+v alloc %s", s.Tasks[0].State, s.Alloc.ClientStatus)
	}
	// The store agrees with memory.
	states, err := a.DB.LoadAllocs()
	if err != nil {
		t.Fatal(err)
	}
	rec := states[0].Tasks["crash"]
	if rec.State.State != state.TaskStateDead || !rec.State.Failed || len(rec.Events) != len(s.Tasks[0].Events) {
		t.Fatalf("stored %+v, %d events vs %d", rec.State, len(rec.Events), len(s.Tasks[0].Events))
	}
}

func TestBatchSuccessCompletes(t *testing.T) {
	a := newAgent(t, "")
	ar := a.Run(testJob(jobspec.JobTypeBatch, rawTask("once", "exit", "0")))
	<-ar.Done()
	if a.Events.Count("once", EventRestarting) != 0 {
		t.Fatal("a successful batch task was restarted")
	}
	s := ar.State()
	if s.Tasks[0].State.Failed || s.Alloc.ClientStatus != state.AllocClientStatusComplete {
		t.Fatalf("state %+v, alloc %s", s.Tasks[0].State, s.Alloc.ClientStatus)
	}
}

func TestKillTimeoutEscalates(t *testing.T) {
	a := newAgent(t, "")
	task := rawTask("stubborn", "ignore-int")
	task.KillSignal, task.KillTimeout = "SIGINT", 200*time.Millisecond
	ar := a.Run(testJob(jobspec.JobTypeService, task))
	a.Events.Wait(t, "stubborn", EventStarted, 1)
	handle(t, ar, "stubborn")
	// "ready" is printed once SIGINT is ignored.
	waitFile(t, filepath.Join(ar.AllocDir(), "alloc", "logs", "stubborn.stdout.0"))
	a.Stop(ar)
	ev := a.Events.Last("stubborn", EventKilled)
	if ev == nil || ev.Signal != int(syscall.SIGKILL) {
		t.Fatalf("killed event %+v, want SIGKILL after kill_timeout", ev)
	}
	// Nomad's code for a signalled exit is 128+signal, never -1.
	if ev.ExitCode != 137 || !strings.HasSuffix(ev.Message, "; Exit Code: 137, Signal: 9") {
		t.Fatalf("killed event %+v, want exit code 137 and Nomad's wording", ev)
	}
}

func TestChecksumMismatchFailsWithoutRestart(t *testing.T) {
	a := newAgent(t, "")
	task := rawTask("bad", "sleep")
	task.Config.Checksum = "sha256:" + strings.Repeat("0", 64)
	ar := a.Run(testJob(jobspec.JobTypeService, task))
	<-ar.Done()
	if a.Events.Count("bad", EventDriverFailure) != 1 || a.Events.Count("bad", EventRestarting) != 0 || a.Events.Count("bad", EventNotRestarting) != 1 {
		t.Fatalf("events %v", a.Events)
	}
	if !strings.Contains(a.Events.Last("bad", EventDriverFailure).Message, "checksum") {
		t.Fatalf("driver failure %q does not say checksum", a.Events.Last("bad", EventDriverFailure).Message)
	}
}

func TestUnknownDriverIsATaskFailure(t *testing.T) {
	a := newAgent(t, "")
	task := rawTask("x", "sleep")
	task.Driver = "docker"
	ar := a.Run(testJob(jobspec.JobTypeService, task))
	<-ar.Done()
	if ev := a.Events.Last("x", EventSetupFailure); ev == nil || !strings.Contains(ev.Message, `driver "docker"`) {
		t.Fatalf("setup failure %+v", ev)
	}
}

// TestAgentRestartReadopts drops the agent with a running task and restores
// a new one from the bbolt file: the same process is re-adopted, none is
// started twice, and its later death is noticed through the pidfd.
func TestAgentRestartReadopts(t *testing.T) {
	a := newAgent(t, "")
	ar := a.Run(testJob(jobspec.JobTypeService, rawTask("web", "sleep")))
	a.Events.Wait(t, "web", EventStarted, 1)
	h := handle(t, ar, "web")

	b := a.restart()
	if !runnertest.Alive(h.Pid, h.StartTime) {
		t.Fatal("task died with the agent")
	}
	b.Events.Wait(t, "web", EventReattached, 1)
	ar2 := b.Runners[0]
	if got := ar2.Task("web").snapshot().Handle; got == nil || got.Pid != h.Pid {
		t.Fatalf("re-adopted handle %+v, want pid %d", got, h.Pid)
	}
	if n := b.Events.Count("web", EventStarted); n != 0 {
		t.Fatalf("%d new starts after restore: a second copy", n)
	}
	// Events from before the restart are still there.
	if evs := ar2.State().Tasks[0].Events; len(evs) == 0 || evs[0].Type != EventReceived {
		t.Fatalf("restored events %v", evs)
	}

	if err := syscall.Kill(h.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ev := b.Events.Wait(t, "web", EventTerminated, 1)
	if !strings.Contains(ev.Message, "unknowable") {
		t.Fatalf("terminated event %q should say the exit code is unknowable", ev.Message)
	}
	b.Events.Wait(t, "web", EventStarted, 1)
	h2 := handle(t, ar2, "web")
	if h2.Pid == h.Pid {
		t.Fatal("restart reused the old pid record")
	}
}

func TestTaskDiedWhileAgentDown(t *testing.T) {
	a := newAgent(t, "")
	ar := a.Run(testJob(jobspec.JobTypeService, rawTask("web", "sleep")))
	a.Events.Wait(t, "web", EventStarted, 1)
	h := handle(t, ar, "web")
	a.Close()
	if err := syscall.Kill(h.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, h.Pid)

	b := a.restart()
	ev := b.Events.Wait(t, "web", EventTerminated, 1)
	if !strings.Contains(ev.Message, "while the agent was down") || ev.Details["exit_code"] != "unknown" {
		t.Fatalf("terminated event %+v", ev)
	}
	b.Events.Wait(t, "web", EventRestarting, 1)
	b.Events.Wait(t, "web", EventStarted, 1)
	handle(t, b.Runners[0], "web")
}

// TestPidReuseGuard restores a handle whose start time does not match the
// process now holding the pid: that process must not be signalled.
func TestPidReuseGuard(t *testing.T) {
	a := newAgent(t, "")
	ar := a.Run(testJob(jobspec.JobTypeService, rawTask("web", "sleep")))
	a.Events.Wait(t, "web", EventStarted, 1)
	h := handle(t, ar, "web")
	a.Close()

	db, err := state.Open(filepath.Join(a.DataDir, "state.db"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	forged := *h
	forged.StartTime++ // the recorded task "started" at another tick
	if err := db.PutTaskHandle(ar.ID(), "web", &forged); err != nil {
		t.Fatal(err)
	}
	db.Close()

	b := a.restart()
	ev := b.Events.Wait(t, "web", EventTerminated, 1)
	if !strings.Contains(ev.Message, "another process") {
		t.Fatalf("terminated event %q", ev.Message)
	}
	b.Events.Wait(t, "web", EventStarted, 1)
	handle(t, b.Runners[0], "web")
	if !runnertest.Alive(h.Pid, h.StartTime) {
		t.Fatal("the process holding the reused pid was signalled")
	}
}

// TestLogsFlowWhileAgentDown: the shipper, not the agent, reads the task's
// pipes, so output written while no agent runs is still rotated to files.
func TestLogsFlowWhileAgentDown(t *testing.T) {
	a := newAgent(t, "")
	a.Cfg.LogFileSizeOverride = 1000
	task := rawTask("chatty", "burst", "100")
	ar := a.Run(testJob(jobspec.JobTypeBatch, task))
	a.Events.Wait(t, "chatty", EventStarted, 1)
	h := handle(t, ar, "chatty")
	if h.LogmonPid == 0 || !runnertest.Alive(h.LogmonPid, h.LogmonStartTime) {
		t.Fatalf("no live log shipper recorded: %+v", h)
	}
	// "ready" in the log means the task's signal handlers are installed
	// (before that, Go ignores SIGUSR1/2).
	logDir := filepath.Join(a.DataDir, "alloc", ar.ID(), "alloc", "logs")
	waitFile(t, filepath.Join(logDir, "chatty.stdout.0"))
	a.Close() // agent down

	// 100 lines of 100 bytes to each stream. The exit signal waits until
	// the burst has rotated the files past max_files: signals sent back
	// to back may be merged or handled out of order, and a task that took
	// SIGUSR2 first exited before writing (1 failure in ~15 under load).
	if err := syscall.Kill(h.Pid, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	waitRotatedPast(t, logDir, "chatty.stdout.", 3)
	if err := syscall.Kill(h.Pid, syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	waitGone(t, h.Pid)
	waitGone(t, h.LogmonPid) // it exits once the task's pipes close

	ents, err := os.ReadDir(logDir)
	if err != nil {
		t.Fatal(err)
	}
	var stdout []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "chatty.stdout.") {
			stdout = append(stdout, e.Name())
			if fi, _ := e.Info(); fi.Size() > 1000 {
				t.Errorf("%s is %d bytes, over the cap", e.Name(), fi.Size())
			}
		}
	}
	if len(stdout) != 3 {
		t.Fatalf("stdout files %v, want max_files = 3 after rotation", stdout)
	}
	if _, err := os.Stat(filepath.Join(logDir, "chatty.stdout.0")); !os.IsNotExist(err) {
		t.Fatal("the oldest file was not rotated away")
	}
}

// waitRotatedPast waits (a poll: the files are written by another process)
// until a log file prefix<N> with N >= index exists. A rotated-away file
// may exist only for a moment, so the highest index is what counts.
func waitRotatedPast(t *testing.T, dir, prefix string, index int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), prefix)); err == nil && strings.HasPrefix(e.Name(), prefix) && n >= index {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s<N> with N >= %d in %s", prefix, index, dir)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestGoPluginTaskSurvivesAgentRestart(t *testing.T) {
	a := newAgent(t, "")
	task := &jobspec.Task{
		Name: "csi", Driver: jobspec.DriverGoPlugin,
		Config:      &jobspec.TaskConfig{Command: testPlugin},
		KillTimeout: 5 * time.Second, KillSignal: "SIGTERM",
	}
	ar := a.Run(testJob(jobspec.JobTypeService, task))
	a.Events.Wait(t, "csi", EventStarted, 1)
	h := handle(t, ar, "csi")
	if h.Reattach == nil || !strings.HasPrefix(h.SocketPath, ar.SocketDir()) {
		t.Fatalf("handle %+v, socket dir %s", h, ar.SocketDir())
	}
	b := a.restart()
	b.Events.Wait(t, "csi", EventReattached, 1)
	if b.Events.Count("csi", EventStarted) != 0 {
		t.Fatal("plugin started twice")
	}
	b.Stop(b.Runners[0])
	waitGone(t, h.Pid)
	if _, err := os.Stat(h.SocketPath); !os.IsNotExist(err) {
		t.Fatalf("socket %s left after stop: %v", h.SocketPath, err)
	}
	_ = driver.ErrTaskGone
}

func TestRestoreNoticesDeadLogShipper(t *testing.T) {
	a := newAgent(t, "")
	ar := a.Run(testJob(jobspec.JobTypeService, rawTask("web", "sleep")))
	a.Events.Wait(t, "web", EventStarted, 1)
	h := handle(t, ar, "web")
	// The task's only write must have reached the shipper before it dies:
	// a later write would find no reader and SIGPIPE would kill the task.
	waitFile(t, filepath.Join(ar.AllocDir(), "alloc", "logs", "web.stdout.0"))
	a.Close()
	if err := syscall.Kill(h.LogmonPid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, h.LogmonPid)
	b := a.restart()
	b.Events.Wait(t, "web", EventLogShipperGone, 1)
	if b.Events.Count("web", EventReattached) != 1 {
		t.Fatalf("events %v; terminated: %+v", b.Events, b.Events.Last("web", EventTerminated))
	}
	if ev := b.Events.Wait(t, "web", EventLogShipperGone, 1); !strings.Contains(ev.Message, "not being recorded") {
		t.Fatalf("event %q", ev.Message)
	}
}

func TestSignalTask(t *testing.T) {
	a := newAgent(t, "")
	ar := a.Run(testJob(jobspec.JobTypeService, rawTask("web", "sleep")))
	a.Events.Wait(t, "web", EventStarted, 1)
	handle(t, ar, "web")
	if err := ar.Task("web").Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	a.Events.Wait(t, "web", EventSignaling, 1)
	if ev := a.Events.Wait(t, "web", EventTerminated, 1); ev.Signal != int(syscall.SIGTERM) ||
		ev.ExitCode != 143 || ev.Message != "Exit Code: 143, Signal: 15" {
		t.Fatalf("terminated %+v, want by SIGTERM: exit code 143 as Nomad reports it", ev)
	}
	a.Events.Wait(t, "web", EventStarted, 2) // service tasks restart
}

// TestSiblingFailed: a task that fails for good fails its allocation, and
// its running sibling is killed with a "Sibling Task Failed" event, as in
// Nomad. Before, the allocation stayed "running" with half its tasks.
func TestSiblingFailed(t *testing.T) {
	a := newAgent(t, "")
	ar := a.Run(testJob(jobspec.JobTypeService, rawTask("crash", "exit", "3"), rawTask("steady", "sleep", "60")))
	a.Events.Wait(t, "steady", EventSiblingFailed, 1)
	a.Events.Wait(t, "steady", EventKilled, 1)
	<-ar.Done()
	if ev := a.Events.Last("steady", EventSiblingFailed); !strings.Contains(ev.Message, `"crash"`) {
		t.Errorf("sibling event %+v should name the failed task", ev)
	}
	if ev := a.Events.Last("steady", EventKilling); !strings.Contains(ev.Message, "sibling task") {
		t.Errorf("killing event %+v should say why", ev)
	}
	s := ar.State()
	if s.Alloc.ClientStatus != state.AllocClientStatusFailed {
		t.Fatalf("allocation %s after a task failed, want failed", s.Alloc.ClientStatus)
	}
	for _, ts := range s.Tasks {
		if ts.State.State != state.TaskStateDead {
			t.Fatalf("task %s is %s, want dead", ts.Name, ts.State.State)
		}
	}
}

// TestDestroyedStaysGone: a second Destroy, or a Stop after Destroy, must
// not write the allocation's record again: PutAlloc creates what is
// missing, and a kill -9 between that write and the next delete left a
// headless allocation for the next agent to restore (the chaos test's
// seed 11 found a stopped allocation of a purged job coming back and
// taking a slot of the job's next incarnation).
func TestDestroyedStaysGone(t *testing.T) {
	a := newAgent(t, "")
	ar := a.Run(testJob(jobspec.JobTypeService, rawTask("web", "sleep", "60")))
	a.Events.Wait(t, "web", EventStarted, 1)
	ctx := context.Background()
	if err := ar.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ar.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ar.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	allocs, err := a.DB.Allocs()
	if err != nil {
		t.Fatal(err)
	}
	if len(allocs) != 0 {
		t.Fatalf("a destroyed allocation came back: %+v", allocs[0])
	}
}

// countingHook counts an allocation hook's prerun and postrun calls.
type countingHook struct {
	mu      sync.Mutex
	preruns int
	postrun chan struct{}
}

func (h *countingHook) Name() string { return "counting" }

func (h *countingHook) Prerun(context.Context, *AllocHookRequest) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.preruns++
	return nil
}

func (h *countingHook) Postrun(*AllocHookRequest) { close(h.postrun) }

// An allocation restored with every task dead (a finished batch job) does
// not run its prerun hooks again, which for volumes would claim them anew
// only for postrun to release them; postrun still runs, for whatever the
// previous agent had not released yet.
func TestRestoredDeadAllocSkipsPrerun(t *testing.T) {
	a := newAgent(t, "")
	first := &countingHook{postrun: make(chan struct{})}
	a.Cfg.AllocHooks = func(*AllocHookRequest) []AllocHook { return []AllocHook{first} }
	ar := a.Run(testJob(jobspec.JobTypeBatch, rawTask("once", "exit", "0")))
	<-ar.Done()
	<-first.postrun

	again := &countingHook{postrun: make(chan struct{})}
	b := a.restartWith(func(c *Config) {
		c.AllocHooks = func(*AllocHookRequest) []AllocHook { return []AllocHook{again} }
	})
	<-b.Runners[0].Done()
	select {
	case <-again.postrun:
	case <-time.After(30 * time.Second):
		t.Fatal("postrun did not run for the restored dead allocation")
	}
	again.mu.Lock()
	defer again.mu.Unlock()
	if again.preruns != 0 {
		t.Fatalf("prerun ran %d times for an allocation restored with every task dead", again.preruns)
	}
}
