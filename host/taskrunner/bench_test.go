package taskrunner

import (
	"bufio"
	"os/exec"
	"runtime"
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
		ar := a.run(job)
		n++
		a.ev.wait(b, "web", EventStarted, n)
		b.StopTimer()
		a.stop(ar)
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
		ar := a.run(testJob(jobspec.JobTypeService, task))
		a.ev.wait(b, "web", EventStarted, i+1)
		h := handle(b, ar, "web")
		b.Cleanup(func() { _ = syscall.Kill(-h.Pid, syscall.SIGKILL) })
	}
	var heapPerTask float64
	for b.Loop() {
		b.StopTimer()
		a.close()
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		b.StartTimer()
		a = a.restart()
		a.ev.wait(b, "web", EventReattached, tasks)
		b.StopTimer()
		if n := a.ev.count("web", EventStarted); n != 0 {
			b.Fatalf("%d tasks started again instead of re-adopted", n)
		}
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		heapPerTask = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / tasks
		b.StartTimer()
	}
	b.ReportMetric(heapPerTask, "heapB/task")
}
