package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// BenchmarkJobRunToRunning measures `job run` → task running through the
// API (register, then the AllocationUpdated event that says running) and,
// in the same run, a bare os/exec Start of the same command. ns/op is the
// agent path; bare-ns/op and x-bare compare.
func BenchmarkJobRunToRunning(b *testing.B) {
	e := newEnv(b, "")
	a := e.start()
	m := e.markerFor("bench")
	vs := paired{label: "bare"}
	ctx := context.Background()
	n := 0
	for b.Loop() {
		b.StopTimer()
		id := fmt.Sprintf("bench-%d", n)
		n++
		src := []byte(jobHCL(id, "", shTask("t", m, sleeper)))
		es, err := a.client.Events(ctx, api.TopicAllocation)
		if err != nil {
			b.Fatalf("subscribe: %v", err)
		}
		b.StartTimer()
		start := time.Now()
		if _, err := a.client.RegisterJobSource(ctx, id+".hcl", src); err != nil {
			b.Fatalf("register: %v", err)
		}
		for {
			ev, err := es.Next(ctx)
			if err != nil {
				b.Fatalf("event stream: %v", err)
			}
			if ev.Payload.JobID == id && ev.Payload.Allocation != nil && ev.Payload.Allocation.ClientStatus == api.AllocClientStatusRunning {
				break
			}
		}
		agentTook := time.Since(start)
		b.StopTimer()
		_ = es.Close()

		start = time.Now()
		cmd := exec.Command("/bin/sh", "-c", sleeper)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			b.Fatalf("bare start: %v", err)
		}
		vs.add(agentTook, time.Since(start))
		_ = cmd.Process.Kill()
		_ = cmd.Wait()

		if err := a.client.StopJob(ctx, id, true); err != nil {
			b.Fatalf("stop %s: %v", id, err)
		}
		b.StartTimer()
	}
	vs.report(b)
}

// paired collects timings of the benchmarked path and of the path it is
// compared with, run right after or right before it (alternately, so that
// neither always runs on the caches the other warmed): an agent run against
// a bare one ("bare"), cgroups against none, exec against raw_exec. On a
// shared 2-core VM the speed of both drifts over seconds, so besides the
// ratio of the totals (x-LABEL) it reports the median of the per-pair
// ratios (x-LABEL-p50), which a slow stretch moves far less.
type paired struct {
	label       string // of the other path, as in "raw_exec-ns/op"
	mine, other []time.Duration
}

func (p *paired) add(mine, other time.Duration) {
	p.mine = append(p.mine, mine)
	p.other = append(p.other, other)
}

func (p *paired) report(b *testing.B) {
	var mine, other time.Duration
	ratios := make([]float64, 0, len(p.mine))
	for i := range p.mine {
		mine += p.mine[i]
		other += p.other[i]
		if p.other[i] > 0 {
			ratios = append(ratios, float64(p.mine[i])/float64(p.other[i]))
		}
	}
	if other <= 0 || len(ratios) == 0 {
		return
	}
	slices.Sort(ratios)
	b.ReportMetric(median(p.mine), "p50-ns")
	b.ReportMetric(float64(other.Nanoseconds())/float64(len(p.other)), p.label+"-ns/op")
	b.ReportMetric(median(p.other), p.label+"-p50-ns")
	b.ReportMetric(float64(mine)/float64(other), "x-"+p.label)
	b.ReportMetric(ratios[len(ratios)/2], "x-"+p.label+"-p50")
}

func median(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2].Nanoseconds())
}

// restartTasks is how many running tasks BenchmarkAgentRestart re-adopts.
const restartTasks = 100

// BenchmarkAgentRestart measures an agent killed with SIGKILL and started
// again while 100 raw_exec tasks run: ns/op runs from exec to the agent
// reporting ready with every allocation running. It checks that no task was
// relaunched and reports the agent's resident memory per adopted task
// (VmRSS after the restore minus that of an agent with no tasks, over 100).
func BenchmarkAgentRestart(b *testing.B) {
	empty := newEnv(b, "")
	idle := empty.start()
	baseRSS := vmRSS(b, idle.pid())

	e := newEnv(b, "")
	a := e.start()
	m := e.markerFor("many")
	// Started events, not "running": see runStarted.
	a.runStarted("many", jobHCL("many", fmt.Sprintf("    count = %d", restartTasks), shTask("t", m, sleeper)), restartTasks)
	allRunning := jobRunning("many", "t", restartTasks)
	var rss int64
	restartLoop(b, e, a, m, restartTasks, "tasks running", api.TopicAllocation, allRunning, func(a *agentProc) {
		rss = vmRSS(b, a.pid())
	})
	b.ReportMetric(float64(rss-baseRSS)/restartTasks, "KiB-rss/task")
	b.ReportMetric(float64(rss), "KiB-rss")
	b.ReportMetric(float64(baseRSS), "KiB-rss-idle")
}

// jobRunning is the condition, for restartLoop, that n allocations of job
// run with their task t running.
func jobRunning(job, task string, n int) func(a *agentProc) func(context.Context) (bool, error) {
	return func(a *agentProc) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			stubs, err := a.client.JobAllocations(ctx, job)
			if err != nil {
				return false, err
			}
			running := 0
			for _, s := range stubs {
				if ts := s.TaskStates[task]; s.ClientStatus == api.AllocClientStatusRunning && ts != nil && ts.State == api.TaskStateRunning {
					running++
				}
			}
			return running == n, nil
		}
	}
}

// restartLoop waits until ready holds for the agent a, notes the n
// processes carrying marker, then b.N times kills the agent with SIGKILL and
// times a new one from exec until ready holds again (ready is re-evaluated
// on every event of topic). After each restart the marked processes must be
// exactly the first ones (re-adopted, none relaunched); after, if not nil,
// runs untimed on the new agent.
func restartLoop(b *testing.B, e *env, a *agentProc, marker string, n int, what, topic string,
	ready func(*agentProc) func(context.Context) (bool, error), after func(*agentProc)) {
	b.Helper()
	a.mustWait("all "+what, 5*time.Minute, ready(a), topic)
	pids := topMarked(marker)
	if len(pids) != n {
		b.Fatalf("%d marked processes, want %d", len(pids), n)
	}
	i := 0
	for b.Loop() {
		i++
		b.StopTimer()
		a.kill()
		b.StartTimer()
		a = e.start()
		a.mustWait("all "+what+" again", 5*time.Minute, ready(a), topic)
		b.StopTimer()
		if after != nil {
			after(a)
		}
		if got := topMarked(marker); !sameSet(got, pids) {
			b.Fatalf("after restart %d: %d marked processes, not the %d adopted ones", i, len(got), len(pids))
		}
		b.StartTimer()
	}
}

// vmRSS reads a process's resident set in KiB.
func vmRSS(b testing.TB, pid int) int64 {
	b.Helper()
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Fatalf("status of %d: %v", pid, err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				b.Fatalf("VmRSS of %d: %v", pid, err)
			}
			return kb
		}
	}
	b.Fatalf("no VmRSS for %d", pid)
	return 0
}

func sameSet(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	seen := make(map[int]bool, len(a))
	for _, x := range a {
		seen[x] = true
	}
	for _, x := range b {
		if !seen[x] {
			return false
		}
	}
	return true
}
