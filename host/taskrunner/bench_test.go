package taskrunner

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/pluginhost/pluginhost/host/jobspec"
)

// BenchmarkBareForkExec is the floor for BenchmarkRunToRunning: fork/exec
// of the same binary until it has printed its first line.
func BenchmarkBareForkExec(b *testing.B) {
	for b.Loop() {
		cmd := exec.Command(testTask, "sleep")
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
			b.Fatal(err)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}

// BenchmarkRunToRunning measures a new allocation from NewAllocRunner to
// the Started event: hooks, task dir, a log shipper process, the task
// process, and the durable state writes.
func BenchmarkRunToRunning(b *testing.B) {
	a := newAgent(b, "")
	job := testJob(jobspec.JobTypeService, rawTask("web", "sleep"))
	n := 0
	for b.Loop() {
		ar := a.Run(job)
		n++
		a.Events.Wait(b, "web", EventStarted, n)
		b.StopTimer()
		a.Stop(ar)
		b.StartTimer()
	}
}

// BenchmarkRestore100 measures an agent restart with 100 running
// allocations: from RestoreAllocRunner to every task re-adopted, and the
// restored runners' heap per task.
func BenchmarkRestore100(b *testing.B) {
	const tasks = 100
	a := newAgent(b, "")
	for i := range tasks {
		task := rawTask("web", "sleep")
		task.Logs = &jobspec.LogConfig{Disabled: true}
		ar := a.Run(testJob(jobspec.JobTypeService, task))
		a.Events.Wait(b, "web", EventStarted, i+1)
		h := handle(b, ar, "web")
		b.Cleanup(func() { _ = syscall.Kill(-h.Pid, syscall.SIGKILL) })
	}
	var heapPerTask, rssPerTask float64
	for b.Loop() {
		b.StopTimer()
		a.Close()
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		rssBefore := vmRSS(b)
		b.StartTimer()
		a = a.restart()
		a.Events.Wait(b, "web", EventReattached, tasks)
		b.StopTimer()
		if n := a.Events.Count("web", EventStarted); n != 0 {
			b.Fatalf("%d tasks started again instead of re-adopted", n)
		}
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		heapPerTask = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / tasks
		rssPerTask = float64(vmRSS(b)-rssBefore) / tasks
		b.StartTimer()
	}
	b.ReportMetric(heapPerTask, "heapB/task")
	// RSS only grows when the heap needs new pages, so this is a noisy
	// upper bound of what the restored runners cost.
	b.ReportMetric(rssPerTask, "rssB/task")
}

// vmRSS is this process's resident set in bytes.
func vmRSS(b *testing.B) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
