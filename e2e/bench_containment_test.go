package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// Benchmarks of containment (issue 18): what a task's cgroup costs a
// launch, what the exec driver's root and namespaces cost on top, how
// fast a hundred exec tasks are re-adopted, and the agent's memory per
// exec task. Targets: raw_exec with its cgroup within 1.1× of raw_exec
// without; exec within 1.5× of raw_exec; 100 exec tasks re-adopted in
// 0.3 s; under 256 KiB of agent RSS per task.

// termSleeper runs forever and ends on the kill signal (SIGINT by
// default, or SIGTERM), also as an exec task: as pid 1 of its pid
// namespace a process gets no signal it has no handler for (SIGKILL
// aside), so an exec task of `exec sleep` makes every stop wait out its
// kill_timeout. wait returns on the trapped signal.
const termSleeper = `trap 'exit 0' INT TERM; echo started; sleep 1000000 & wait`

// newEnvNoCgroups is newEnv for an agent that cannot use cgroups: it runs
// in a mount namespace of its own where /sys/fs/cgroup is unmounted, as
// on a host or in a container without cgroupfs. The agent finds no cgroup
// mount and runs its tasks without (cgroup.Detect), which is the only way
// to have a root agent without cgroups: there is no switch, as Nomad (1.7
// on) has none.
func newEnvNoCgroups(t testing.TB, extraConfig string) *env {
	t.Helper()
	e := newEnv(t, extraConfig)
	e.noCgroups = true
	return e
}

// timeRun registers a job and returns the time from the submission to the
// event saying its allocation runs. It is called with b's timer stopped;
// if timed, that span (and not the subscription made first) runs on it.
func (a *agentProc) timeRun(b *testing.B, timed bool, id, src string) time.Duration {
	b.Helper()
	ctx := context.Background()
	es, err := a.client.Events(ctx, api.TopicAllocation)
	if err != nil {
		b.Fatalf("subscribe: %v", err)
	}
	defer es.Close()
	if timed {
		b.StartTimer()
	}
	start := time.Now()
	if _, err := a.client.RegisterJobSource(ctx, id+".hcl", []byte(src)); err != nil {
		b.Fatalf("register %s: %v", id, err)
	}
	for {
		ev, err := es.Next(ctx)
		if err != nil {
			b.Fatalf("event stream: %v", err)
		}
		if p := ev.Payload; p.JobID == id && p.Allocation != nil {
			if p.Allocation.ClientStatus == api.AllocClientStatusRunning {
				break
			}
			if p.Allocation.ClientStatus == api.AllocClientStatusFailed {
				b.Fatalf("job %s failed:\n%s", id, tail(a.output(), 4000))
			}
		}
	}
	took := time.Since(start)
	if timed {
		b.StopTimer()
	}
	return took
}

// purge stops and forgets a job and returns how long that took; StopJob
// returns once its tasks are dead and their cgroups gone.
func (a *agentProc) purge(b *testing.B, id string) time.Duration {
	b.Helper()
	start := time.Now()
	if err := a.client.StopJob(context.Background(), id, true); err != nil {
		b.Fatalf("stop %s: %v", id, err)
	}
	return time.Since(start)
}

// BenchmarkJobRunCgroup measures raw_exec `job run` → running on an agent
// that puts the task in a cgroup of its own (ns/op) against the same on an
// agent without cgroups (nocgroup-ns/op); x-nocgroup-p50 is the median of
// the per-pair ratios.
func BenchmarkJobRunCgroup(b *testing.B) {
	with, without := newEnv(b, ""), newEnvNoCgroups(b, "")
	wa, woa := with.start(), without.start()
	if !strings.Contains(woa.output(), "cgroups cannot be used") {
		b.Fatalf("the agent without cgroupfs still uses cgroups:\n%s", woa.output())
	}
	vs := paired{label: "nocgroup"}
	var stops, stopsWithout []time.Duration
	n := 0
	for b.Loop() {
		b.StopTimer()
		n++
		id := fmt.Sprintf("raw-%d", n)
		runWith := func() time.Duration {
			d := wa.timeRun(b, true, id, jobHCL(id, "", shTask("t", with.markerFor(id), termSleeper)))
			if n == 1 && len(taskCgroups(with.cgroupParent)) == 0 {
				b.Fatal("the task runs in no cgroup")
			}
			stops = append(stops, wa.purge(b, id))
			return d
		}
		runWithout := func() time.Duration {
			d := woa.timeRun(b, false, id, jobHCL(id, "", shTask("t", without.markerFor(id), termSleeper)))
			if n == 1 && len(taskCgroups(without.cgroupParent)) > 0 {
				b.Fatal("the agent without cgroupfs made a cgroup")
			}
			stopsWithout = append(stopsWithout, woa.purge(b, id))
			return d
		}
		if n%2 == 1 {
			d := runWith()
			vs.add(d, runWithout())
		} else {
			o := runWithout()
			vs.add(runWith(), o)
		}
		b.StartTimer()
	}
	vs.report(b)
	// The stop (untimed): kill_signal, the exit, the group's kill sweep
	// and removal, against the same without cgroups.
	b.ReportMetric(median(stops), "stop-p50-ns")
	b.ReportMetric(median(stopsWithout), "nocgroup-stop-p50-ns")
}

// BenchmarkJobRunExec measures exec `job run` → running (ns/op): the
// namespace helper, the task's root and its cgroup; raw_exec-ns/op is the
// same shell as a raw_exec task on the same agent, run alternately.
func BenchmarkJobRunExec(b *testing.B) {
	e := newEnv(b, "")
	a := e.start()
	vs := paired{label: "raw_exec"}
	n := 0
	for b.Loop() {
		b.StopTimer()
		n++
		runExec := func() time.Duration {
			id := fmt.Sprintf("exec-%d", n)
			d := a.timeRun(b, true, id, jobHCL(id, "", execTask("t", e.markerFor(id), termSleeper)))
			a.purge(b, id)
			return d
		}
		runRaw := func() time.Duration {
			id := fmt.Sprintf("raw-%d", n)
			d := a.timeRun(b, false, id, jobHCL(id, "", shTask("t", e.markerFor(id), termSleeper)))
			a.purge(b, id)
			return d
		}
		if n%2 == 1 {
			d := runExec()
			vs.add(d, runRaw())
		} else {
			o := runRaw()
			vs.add(runExec(), o)
		}
		b.StartTimer()
	}
	vs.report(b)
}

// BenchmarkAgentRestartExec kills the agent with SIGKILL while 100 exec
// tasks run and starts it again: ns/op runs from the new agent's exec to
// the API showing every task re-adopted (a Reattached event of this agent
// on each; a restored allocation reads "running" from the store before
// its task is re-adopted, so "running" alone would not do). The pids must
// be the same afterwards: none relaunched. last-reattach-ns is exec to the
// last Reattached event's own time, without the API's polling;
// reattach-span-ns the first to the last Reattached event, the restore
// phase alone. KiB-rss/task is the agent's VmRSS after the restore minus
// that of an agent with no tasks, over 100; KiB-rss/task-launched the same
// for the agent that launched them.
func BenchmarkAgentRestartExec(b *testing.B) {
	empty := newEnv(b, "")
	idle := empty.start()
	baseRSS := vmRSS(b, idle.pid())

	e := newEnv(b, "")
	a := e.start()
	m := e.markerFor("many")
	a.runStarted("many", jobHCL("many", fmt.Sprintf("    count = %d", restartTasks), execTask("t", m, termSleeper)), restartTasks)
	launchedRSS := vmRSS(b, a.pid())
	if got := len(taskCgroups(e.cgroupParent)); got < restartTasks {
		b.Fatalf("%d task cgroups for %d tasks", got, restartTasks)
	}
	pids := topMarked(m)
	if len(pids) != restartTasks {
		b.Fatalf("%d marked processes, want %d", len(pids), restartTasks)
	}
	var rss int64
	var last, span time.Duration
	i := 0
	for b.Loop() {
		i++
		b.StopTimer()
		a.kill()
		b.StartTimer()
		start := time.Now()
		a = e.start()
		var first, latest int64
		a.mustWait("every task re-adopted", 5*time.Minute, func(ctx context.Context) (bool, error) {
			stubs, err := a.client.JobAllocations(ctx, "many")
			if err != nil {
				return false, err
			}
			first, latest = 0, 0
			n := 0
			for _, s := range stubs {
				ts := s.TaskStates["t"]
				if ts == nil {
					continue
				}
				for _, ev := range ts.Events {
					if ev.Type == "Reattached" && ev.Time >= start.UnixNano() {
						n++
						if first == 0 || ev.Time < first {
							first = ev.Time
						}
						latest = max(latest, ev.Time)
						break
					}
				}
			}
			return n == restartTasks, nil
		}, api.TopicTask)
		b.StopTimer()
		last += time.Duration(latest - start.UnixNano())
		span += time.Duration(latest - first)
		if got := topMarked(m); !sameSet(got, pids) {
			b.Fatalf("after restart %d: %d marked processes, not the %d adopted ones", i, len(got), len(pids))
		}
		rss = vmRSS(b, a.pid())
		b.StartTimer()
	}
	b.ReportMetric(float64(last.Nanoseconds())/float64(i), "last-reattach-ns")
	b.ReportMetric(float64(span.Nanoseconds())/float64(i), "reattach-span-ns")
	b.ReportMetric(float64(rss-baseRSS)/restartTasks, "KiB-rss/task")
	b.ReportMetric(float64(launchedRSS-baseRSS)/restartTasks, "KiB-rss/task-launched")
	b.ReportMetric(float64(rss), "KiB-rss")
	b.ReportMetric(float64(baseRSS), "KiB-rss-idle")
}

// runStarted submits a job and waits for n Started events of its
// allocations. The agent publishes a Started event only once the task's
// handle is stored (the API's view of a task turns "running" a moment
// before), so after this a kill -9 of the agent loses none of them.
func (a *agentProc) runStarted(name, src string, n int) []string {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	es, err := a.client.Events(ctx, api.TopicTask)
	if err != nil {
		a.t.Fatalf("subscribe: %v", err)
	}
	defer es.Close()
	ids := a.runJob(name, src)
	mine := map[string]bool{}
	for _, id := range ids {
		mine[id] = true
	}
	started := map[string]bool{}
	for len(started) < n {
		ev, err := es.Next(ctx)
		if err != nil {
			a.t.Fatalf("waiting for %d tasks of %s to start (%d did): %v\n%s", n, name, len(started), err, tail(a.output(), 4000))
		}
		if ev.Type == api.TaskStarted && mine[ev.Key] {
			started[ev.Key] = true
		}
	}
	return ids
}
