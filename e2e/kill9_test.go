package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// restartPolicy is a quick, patient policy for tests that kill tasks.
const restartPolicy = `    restart {
      attempts = 5
      interval = "10m"
      delay    = "1s"
      mode     = "delay"
    }`

// jobAllocIDs lists a job's allocation IDs, sorted.
func (a *agentProc) jobAllocIDs(job string) []string {
	a.t.Helper()
	stubs, err := a.client.JobAllocations(context.Background(), job)
	if err != nil {
		a.t.Fatalf("allocations of %s: %v", job, err)
	}
	var ids []string
	for _, s := range stubs {
		ids = append(ids, s.ID)
	}
	slices.Sort(ids)
	return ids
}

// onlyCopy asserts that exactly one copy of the task runs, and that it is
// the pid the API names; it returns that pid.
func onlyCopy(t testing.TB, al *api.Allocation, task, marker string) int {
	t.Helper()
	top := topMarked(marker)
	// A process caught inside execve shows an empty environment for a
	// moment (the task shell exec'ing sleep); a missing copy is looked for
	// again, an extra copy never is.
	for deadline := time.Now().Add(2 * time.Second); len(top) == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		top = topMarked(marker)
	}
	if len(top) != 1 {
		t.Fatalf("task %s: %d running copies, want 1: %s", task, len(top), describe(top))
	}
	if pid := lastPid(al, task); pid != top[0] {
		t.Fatalf("task %s: API names pid %d, the running copy is %d", task, pid, top[0])
	}
	return top[0]
}

// stopAndCheckNoOrphans stops the job and asserts that none of the markers
// survives it.
func (a *agentProc) stopAndCheckNoOrphans(job string, markers ...string) {
	a.t.Helper()
	a.stopJob(job)
	for _, m := range markers {
		// The agent has waited for each task's exit; what may linger
		// for a moment is a shell loop's child that was between fork
		// and exec, so this polls briefly.
		waitGone(a.t, m, 3*time.Second)
	}
}

// TestKill9SteadyState kills the agent while raw_exec and go_plugin tasks
// run, kills one task while the agent is down, and checks that the next
// agent adopts the survivors (same pids, one copy each, logs written while
// it was down), reports the dead one's unknowable exit code and restarts
// it, keeps the allocation, and that `job stop` leaves no orphan.
func TestKill9SteadyState(t *testing.T) {
	e := newEnv(t, "")
	a1 := e.start()
	tasks := []taskSpec{
		shTask("logger", e.markerFor("logger"), logLoop),
		shTask("victim", e.markerFor("victim"), sleeper),
		mockcsiGoPlugin(t, "gp", e.markerFor("gp")),
		mockcsiRawExec(t, "rx", e.markerFor("rx")),
	}
	ids := a1.runJob("steady", jobHCL("steady", restartPolicy, tasks...))
	alloc := ids[0]
	var al *api.Allocation
	for _, tk := range tasks {
		al = a1.waitAlloc(alloc, tk.name+" running", running(tk.name))
	}
	before := map[string]int{}
	for _, tk := range tasks {
		before[tk.name] = onlyCopy(t, al, tk.name, tk.marker)
	}
	allocsBefore := a1.jobAllocIDs("steady")

	logFile := filepath.Join(al.AllocDir, "alloc", "logs", "logger.stdout.0")
	assertLogShipper(t, filepath.Join(al.AllocDir, "alloc", "logs"))
	a1.kill()
	for name, pid := range before {
		if !alive(pid) {
			t.Fatalf("task %s (pid %d) died with the agent", name, pid)
		}
	}
	if err := syscall.Kill(before["victim"], syscall.SIGKILL); err != nil {
		t.Fatalf("kill victim: %v", err)
	}
	sizeAtKill := fileSize(t, logFile)
	waitGrowth(t, logFile, sizeAtKill, 10*time.Second)

	a2 := e.start()
	for _, tk := range tasks {
		al = a2.waitAlloc(alloc, tk.name+" running again", running(tk.name))
	}
	al = a2.waitAlloc(alloc, "victim restarted", and(running("victim"), hasEvents("victim", api.TaskStarted, 2)))
	if got := a2.jobAllocIDs("steady"); !slices.Equal(got, allocsBefore) {
		t.Fatalf("allocations after restart %v, before %v", got, allocsBefore)
	}
	for _, tk := range tasks {
		pid := onlyCopy(t, al, tk.name, tk.marker)
		if tk.name == "victim" {
			if pid == before["victim"] {
				t.Fatalf("victim: pid %d was killed but is reported running", pid)
			}
			continue
		}
		if pid != before[tk.name] {
			t.Fatalf("task %s: pid %d after restart, %d before: relaunched instead of adopted", tk.name, pid, before[tk.name])
		}
		if len(events(al, tk.name, "Reattached")) != 1 {
			t.Fatalf("task %s: want one Reattached event, got events %s", tk.name, eventSummary(al, tk.name))
		}
	}
	unknown := false
	for _, ev := range events(al, "victim", api.TaskTerminated) {
		if ev.Details["exit_code"] == "unknown" {
			unknown = true
		}
	}
	if !unknown {
		t.Fatalf("victim: no Terminated event with an unknown exit code: %s", eventSummary(al, "victim"))
	}
	if n := len(events(al, "victim", api.TaskRestarting)); n != 1 {
		t.Fatalf("victim: %d Restarting events, want 1 (policy applied once): %s", n, eventSummary(al, "victim"))
	}

	var markers []string
	for _, tk := range tasks {
		markers = append(markers, tk.marker)
	}
	a2.stopAndCheckNoOrphans("steady", markers...)
	// Log shippers started by the killed agent must go with their tasks
	// too: nothing but the agent may still refer to the allocation.
	waitNoneMentioning(t, filepath.Join(e.dataDir, "alloc"), 5*time.Second)
}

// TestKill9WhileStarting kills the agent at several points of a task's
// launch (raw_exec and go_plugin together) and checks that the next agent
// ends up with exactly one copy of each task in the same allocation.
func TestKill9WhileStarting(t *testing.T) {
	for _, at := range []string{api.TaskReceived, api.TaskSetup, api.TaskStarted} {
		t.Run(strings.ReplaceAll(at, " ", ""), func(t *testing.T) {
			e := newEnv(t, "")
			a1 := e.start()
			tasks := []taskSpec{
				shTask("sh", e.markerFor("sh"), sleeper),
				mockcsiGoPlugin(t, "gp", e.markerFor("gp")),
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			es, err := a1.client.Events(ctx, api.TopicTask)
			if err != nil {
				t.Fatalf("subscribe: %v", err)
			}
			defer es.Close()
			resp, err := a1.client.RegisterJobSource(ctx, "starting.hcl", []byte(jobHCL("starting", restartPolicy, tasks...)))
			if err != nil {
				t.Fatalf("register: %v", err)
			}
			for {
				ev, err := es.Next(ctx)
				if err != nil {
					t.Fatalf("waiting for %q: %v", at, err)
				}
				// The go_plugin task is the slower to launch:
				// killing on its events cuts into its handshake.
				if ev.Payload.TaskName == "gp" && ev.Payload.TaskEvent != nil && ev.Payload.TaskEvent.Type == at {
					break
				}
			}
			a1.kill()

			a2 := e.start()
			alloc := resp.AllocIDs[0]
			var al *api.Allocation
			for _, tk := range tasks {
				al = a2.waitAlloc(alloc, tk.name+" running", running(tk.name))
			}
			if got := a2.jobAllocIDs("starting"); !slices.Equal(got, resp.AllocIDs) {
				t.Fatalf("allocations after restart %v, registered %v", got, resp.AllocIDs)
			}
			for _, tk := range tasks {
				onlyCopy(t, al, tk.name, tk.marker)
			}
			a2.stopAndCheckNoOrphans("starting", tasks[0].marker, tasks[1].marker)
			// A log shipper launched by the killed agent for a task it
			// never recorded would be an orphan too.
			waitNoneMentioning(t, filepath.Join(e.dataDir, "alloc"), 5*time.Second)
		})
	}
}

// TestKill9WhileRestarting kills the agent while a task that exited with
// code 3 waits out its restart delay. The exit code must survive, the task
// must run exactly once per attempt (a launch counter in the allocation dir
// tells), and end up as one copy.
func TestKill9WhileRestarting(t *testing.T) {
	e := newEnv(t, "")
	a1 := e.start()
	m := e.markerFor("flaky")
	// Fails twice with code 3, then runs.
	script := `n=$(cat "$NOMAD_ALLOC_DIR/launches" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$NOMAD_ALLOC_DIR/launches"; ` +
		`if [ $n -le 2 ]; then exit 3; fi; exec sleep 1000000`
	ids := a1.runJob("flaky", jobHCL("flaky", restartPolicy, shTask("flaky", m, script)))
	al := a1.waitAlloc(ids[0], "first restart pending", hasEvents("flaky", api.TaskRestarting, 1))
	a1.kill()
	exit3 := func(al *api.Allocation) int {
		n := 0
		for _, ev := range events(al, "flaky", api.TaskTerminated) {
			if ev.ExitCode == 3 {
				n++
			}
		}
		return n
	}
	if exit3(al) != 1 {
		t.Fatalf("before the kill: want one Terminated event with exit code 3: %s", eventSummary(al, "flaky"))
	}

	a2 := e.start()
	al = a2.waitAlloc(ids[0], "running after two failures", and(running("flaky"), hasEvents("flaky", api.TaskStarted, 3)))
	if got := exit3(al); got != 2 {
		t.Fatalf("after restart: %d Terminated events with exit code 3, want 2 (one from each agent): %s", got, eventSummary(al, "flaky"))
	}
	if got := a2.jobAllocIDs("flaky"); !slices.Equal(got, ids) {
		t.Fatalf("allocations after restart %v, before %v", got, ids)
	}
	onlyCopy(t, al, "flaky", m)
	// Started means forked, not that the script has run its first line:
	// the third launch may still be writing the counter. No event says it
	// has, so poll with a deadline; a fourth launch would still show.
	var n int
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		raw, err := os.ReadFile(filepath.Join(al.AllocDir, "alloc", "launches"))
		if err != nil && !os.IsNotExist(err) {
			t.Fatalf("launch counter: %v", err)
		}
		n, _ = strconv.Atoi(strings.TrimSpace(string(raw)))
		if n >= 3 || time.Now().After(deadline) {
			break
		}
	}
	if n != 3 {
		t.Fatalf("task launched %d times, want 3", n)
	}
	a2.stopAndCheckNoOrphans("flaky", m)
}

// TestKill9WhileStopping kills the agent while it waits out the kill
// timeout of a task that ignores its kill signal. The next agent must finish
// the stop (not restart the task) and leave no process behind.
func TestKill9WhileStopping(t *testing.T) {
	e := newEnv(t, "")
	a1 := e.start()
	m := e.markerFor("stubborn")
	tk := shTask("stubborn", m, `trap '' INT; echo started; exec sleep 1000000`)
	tk.extra = "      kill_signal  = \"SIGINT\"\n      kill_timeout = \"4s\"\n"
	ids := a1.runJob("stubborn", jobHCL("stubborn", restartPolicy, tk))
	al := a1.waitAlloc(ids[0], "running", running("stubborn"))
	pid := onlyCopy(t, al, "stubborn", m)

	stopDone := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		stopDone <- a1.client.StopJob(ctx, "stubborn", false)
	}()
	a1.waitAlloc(ids[0], "killing", hasEvents("stubborn", api.TaskKilling, 1))
	a1.kill()
	if err := <-stopDone; err == nil {
		t.Fatalf("job stop returned success although the agent was killed during the kill timeout")
	}
	if !alive(pid) {
		t.Fatalf("task %d died on SIGINT although it ignores it; the test does not test the interrupted stop", pid)
	}

	a2 := e.start()
	al = a2.waitAlloc(ids[0], "stopped", taskDead("stubborn"))
	if al.DesiredStatus != api.AllocDesiredStatusStop {
		t.Fatalf("desired status %q after the interrupted stop, want stop", al.DesiredStatus)
	}
	if n := len(events(al, "stubborn", api.TaskStarted)); n != 1 {
		t.Fatalf("task started %d times, want 1 (a stopping task must not be restarted): %s", n, eventSummary(al, "stubborn"))
	}
	if alive(pid) {
		t.Fatalf("task %d still runs after the stop finished", pid)
	}
	waitGone(t, m, 3*time.Second)
	if got := a2.jobAllocIDs("stubborn"); !slices.Equal(got, ids) {
		t.Fatalf("allocations after restart %v, before %v", got, ids)
	}
}

// TestSIGTERMLeavesTasksRunning stops the agent cleanly and checks that its
// tasks keep running and the next agent adopts them.
func TestSIGTERMLeavesTasksRunning(t *testing.T) {
	e := newEnv(t, "")
	a1 := e.start()
	tasks := []taskSpec{shTask("sh", e.markerFor("sh"), sleeper), mockcsiGoPlugin(t, "gp", e.markerFor("gp"))}
	ids := a1.runJob("term", jobHCL("term", restartPolicy, tasks...))
	var al *api.Allocation
	for _, tk := range tasks {
		al = a1.waitAlloc(ids[0], tk.name+" running", running(tk.name))
	}
	before := map[string]int{}
	for _, tk := range tasks {
		before[tk.name] = onlyCopy(t, al, tk.name, tk.marker)
	}
	if err := a1.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case <-a1.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("agent did not exit within 30s of SIGTERM:\n%s", tail(a1.output(), 4000))
	}
	if a1.exitErr != nil {
		t.Fatalf("agent exit after SIGTERM: %v\n%s", a1.exitErr, tail(a1.output(), 4000))
	}
	for name, pid := range before {
		if !alive(pid) {
			t.Fatalf("task %s (pid %d) did not survive the agent's SIGTERM", name, pid)
		}
	}
	a2 := e.start()
	for _, tk := range tasks {
		al = a2.waitAlloc(ids[0], tk.name+" adopted", and(running(tk.name), hasEvents(tk.name, "Reattached", 1)))
	}
	for _, tk := range tasks {
		if pid := onlyCopy(t, al, tk.name, tk.marker); pid != before[tk.name] {
			t.Fatalf("task %s: pid %d after restart, %d before", tk.name, pid, before[tk.name])
		}
	}
	a2.stopAndCheckNoOrphans("term", tasks[0].marker, tasks[1].marker)
}

// TestSecondAgentFailsFast starts a second agent on a data dir in use.
func TestSecondAgentFailsFast(t *testing.T) {
	e := newEnv(t, "")
	a1 := e.start()
	a2, started := e.launch()
	select {
	case <-a2.exited:
	case <-started:
		t.Fatalf("a second agent started on a data dir in use:\n%s", a2.output())
	case <-time.After(20 * time.Second):
		t.Fatalf("second agent neither failed nor started within 20s:\n%s", a2.output())
	}
	if a2.exitErr == nil {
		t.Fatalf("second agent exited 0:\n%s", a2.output())
	}
	if out := a2.output(); !strings.Contains(out, "locked") || !strings.Contains(out, e.dataDir) {
		t.Fatalf("second agent's error does not say the state file is locked and where:\n%s", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if ok, err := a1.client.Health(ctx); err != nil || !ok {
		t.Fatalf("first agent after the second one's attempt: ready=%v err=%v", ok, err)
	}
}

// eventSummary renders a task's events for failure messages.
func eventSummary(al *api.Allocation, task string) string {
	var b strings.Builder
	for _, ev := range events(al, task, "") {
		b.WriteString("[" + ev.Type + ": " + ev.DisplayMessage)
		if ev.Type == api.TaskTerminated {
			b.WriteString(" exit=" + strconv.Itoa(ev.ExitCode))
		}
		b.WriteString("] ")
	}
	return b.String()
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	return fi.Size()
}

// waitGrowth polls until path is larger than size: nothing signals a write
// by a process the test did not start, and the agent is down.
func waitGrowth(t testing.TB, path string, size int64, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for fileSize(t, path) <= size {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not grow past %d bytes within %s while the agent was down", path, size, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
