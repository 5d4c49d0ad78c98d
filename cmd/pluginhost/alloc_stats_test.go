package main

import (
	"strings"
	"testing"

	"github.com/pluginhost/pluginhost/api"
)

// alloc status shows each task's resources with what it uses now; -stats
// adds Nomad's Memory Stats and CPU Stats tables, measured fields only,
// sorted by name.
func TestAllocStatusStats(t *testing.T) {
	fa, addr := startAgent(t)
	ctx := testCtx(t)
	runCLI(t, ctx, addr, "job", "run", "-detach", exampleJob)
	id := "00000001-0000-4000-8000-000000000000"
	fa.mu.Lock()
	fa.allocs[id].TaskResources = map[string]*api.Resources{"sleep": {CPU: 100, MemoryMB: 300, MemoryMaxMB: 600}}
	fa.mu.Unlock()

	r := runCLI(t, ctx, addr, "alloc", "status", "00000001")
	if r.code != 0 {
		t.Fatalf("alloc status: %+v", r)
	}
	want := "Task Resources:\nCPU         Memory          Memory Max  Pids\n12/100 MHz  24 MiB/300 MiB  600 MiB     3/2048\n"
	if !strings.Contains(r.stdout, want) {
		t.Errorf("alloc status lacks\n%s\nin:\n%s", want, r.stdout)
	}
	if strings.Contains(r.stdout, "Memory Stats") {
		t.Errorf("detailed stats without -stats:\n%s", r.stdout)
	}

	r = runCLI(t, ctx, addr, "alloc", "status", "-stats", "00000001")
	if r.code != 0 {
		t.Fatalf("alloc status -stats: %+v", r)
	}
	for _, want := range []string{
		"Memory Stats\n" +
			"Cache    Kernel Max Usage  Kernel Usage  Mapped File  Max Usage  RSS     Usage\n" +
			"1.0 MiB  400 KiB           300 KiB       512 KiB      30 MiB     24 MiB  26 MiB\n",
		"CPU Stats\n" +
			"Percent  System Mode  Throttled Periods  Throttled Time  User Mode\n" +
			"0.57%    0.25%        3                  4000            0.33%\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("alloc status -stats lacks\n%s\nin:\n%s", want, r.stdout)
		}
	}
	// Unmeasured Swap is not shown as a zero.
	if strings.Contains(r.stdout, "Swap") {
		t.Errorf("unmeasured Swap shown:\n%s", r.stdout)
	}
	// The tables come between the task's summary and its events.
	if i, j := strings.Index(r.stdout, "CPU Stats"), strings.Index(r.stdout, "Recent Events:"); i < 0 || j < i {
		t.Errorf("stats not before the events:\n%s", r.stdout)
	}

	// A dead task has its resources but no usage, and nothing is asked.
	runCLI(t, ctx, addr, "job", "run", "-detach", crashJob(t))
	var crashed string
	fa.mu.Lock()
	for aid, a := range fa.allocs {
		if a.JobID == "crashy" {
			crashed = aid
			a.TaskResources = map[string]*api.Resources{"sleep": {CPU: 250, MemoryMB: 64}}
		}
	}
	fa.mu.Unlock()
	r = runCLI(t, ctx, addr, "alloc", "status", "-stats", crashed)
	if r.code != 0 || !strings.Contains(r.stdout, "CPU      Memory\n250 MHz  64 MiB\n") || strings.Contains(r.stdout, "CPU Stats") || r.stderr != "" {
		t.Errorf("dead task: %+v", r)
	}
}

// The Pids column shows a running task's count against its limit, the
// count alone without a limit, and is left out where nothing counted.
func TestTaskResourcesPids(t *testing.T) {
	res := &api.Resources{CPU: 100, MemoryMB: 300}
	usage := func(p *api.PidsStats) *api.TaskResourceUsage {
		return &api.TaskResourceUsage{ResourceUsage: &api.ResourceUsage{
			CpuStats: &api.CpuStats{TotalTicks: 12}, MemoryStats: &api.MemoryStats{RSS: 24 << 20}, PidsStats: p}}
	}
	for _, c := range []struct {
		usage *api.TaskResourceUsage
		want  string
	}{
		{usage(&api.PidsStats{Current: 64, Limit: 64}), "CPU         Memory          Pids\n12/100 MHz  24 MiB/300 MiB  64/64"},
		{usage(&api.PidsStats{Current: 3}), "CPU         Memory          Pids\n12/100 MHz  24 MiB/300 MiB  3"},
		{usage(nil), "CPU         Memory\n12/100 MHz  24 MiB/300 MiB"},
		{nil, "CPU      Memory\n100 MHz  300 MiB"},
	} {
		if got := taskResources(res, c.usage); got != "Task Resources:\n"+c.want {
			t.Errorf("got %q, want %q", got, "Task Resources:\n"+c.want)
		}
	}
}

func TestIBytes(t *testing.T) {
	for n, want := range map[uint64]string{
		0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 300 << 20: "300 MiB",
		25 << 20: "25 MiB", 1<<30 + 1<<29: "1.5 GiB", 20000000: "19 MiB",
	} {
		if got := iBytes(n); got != want {
			t.Errorf("iBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
