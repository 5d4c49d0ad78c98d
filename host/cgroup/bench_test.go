package cgroup

import (
	"os/exec"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// benchLifecycle measures one task's cgroup life: Create with limits,
// AddPid of a running process, Kill, Destroy. Starting and reaping the
// process is outside the timer.
// The phases' mean times are reported too.
func benchLifecycle(b *testing.B, m *Manager) {
	var create, add, kill, destroy time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cmd := exec.Command("sleep", "300")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		g, err := m.Create("bench"+strconv.Itoa(i), Limits{MemoryMB: 64, CPU: 100})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := g.AddPid(cmd.Process.Pid); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if err := g.Kill(b.Context()); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		if err := g.Destroy(); err != nil {
			b.Fatal(err)
		}
		t4 := time.Now()
		b.StopTimer()
		create, add, kill, destroy = create+t1.Sub(t0), add+t2.Sub(t1), kill+t3.Sub(t2), destroy+t4.Sub(t3)
		_ = cmd.Wait()
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(float64(create.Nanoseconds())/n, "create-ns")
	b.ReportMetric(float64(add.Nanoseconds())/n, "addpid-ns")
	b.ReportMetric(float64(kill.Nanoseconds())/n, "kill-ns")
	b.ReportMetric(float64(destroy.Nanoseconds())/n, "destroy-ns")
}

func BenchmarkV1Lifecycle(b *testing.B) { benchLifecycle(b, realV1(b)) }

func BenchmarkV2UnifiedLifecycle(b *testing.B) { benchLifecycle(b, realUnified(b)) }

// benchAddPid moves one process back and forth between two groups: the
// cost of joining a stopped child to its group.
func benchAddPid(b *testing.B, m *Manager) {
	ga, err := m.Create("a", Limits{MemoryMB: 64})
	if err != nil {
		b.Fatal(err)
	}
	gb, err := m.Create("b", Limits{MemoryMB: 64})
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = unix.Kill(cmd.Process.Pid, unix.SIGKILL)
		_ = cmd.Wait()
		_ = ga.Destroy()
		_ = gb.Destroy()
	})
	pid := cmd.Process.Pid
	b.ReportMetric(float64(len(ga.ProcsFiles())), "hierarchies")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g := ga
		if i%2 == 1 {
			g = gb
		}
		if err := g.AddPid(pid); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkV1AddPid(b *testing.B) { benchAddPid(b, realV1(b)) }

func BenchmarkV2UnifiedAddPid(b *testing.B) { benchAddPid(b, realUnified(b)) }
