package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pluginhost/pluginhost/host/cgroup"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// Every running task gets the thirteen client.allocs gauges with Nomad's
// labels, read at scrape time; a task gone between two scrapes has no
// series left. OOM kills are counted per task.
func TestTaskUsageGauges(t *testing.T) {
	m := New()
	usage := []TaskUsage{
		{AllocID: "a1", Job: "web", Group: "g", Task: "srv", TotalTicks: 210,
			Stats: &taskrunner.TaskStats{Stats: cgroup.Stats{MemoryRSS: 20 << 20, MemoryUsage: 21 << 20, CPUThrottledNanos: 7},
				CPUPercent: 10, CPUUserPercent: 8, CPUSystemPercent: 2}},
		{AllocID: "a2", Job: "web", Group: "g", Task: "srv", Stats: &taskrunner.TaskStats{}},
		{AllocID: "a3", Job: "web", Group: "g", Task: "gone"}, // no sample
	}
	if err := m.WatchTaskUsage(func() []TaskUsage { return usage }); err != nil {
		t.Fatal(err)
	}
	m.TaskOOMKilled(taskrunner.TaskLabels{Job: "web", Group: "g", Task: "srv"})
	m.TaskOOMKilled(taskrunner.TaskLabels{Job: "web", Group: "g", Task: "srv"})

	names := []string{"memory_rss", "memory_cache", "memory_swap", "memory_usage", "memory_max_usage",
		"memory_kernel_usage", "memory_kernel_max_usage", "cpu_total_percent", "cpu_system", "cpu_user",
		"cpu_throttled_time", "cpu_throttled_periods", "cpu_total_ticks"}
	for i := range names {
		names[i] = "pluginhost_client_allocs_" + names[i]
	}
	n, err := testutil.GatherAndCount(m.Gatherer(), names...)
	if err != nil || n != 2*13 {
		t.Fatalf("%d series (%v), want 26: two sampled tasks, 13 gauges", n, err)
	}
	want := `
# HELP pluginhost_client_allocs_memory_rss Anonymous memory of a running task's cgroup, bytes (v1 total_rss, v2 anon).
# TYPE pluginhost_client_allocs_memory_rss gauge
pluginhost_client_allocs_memory_rss{alloc_id="a1",job="web",task="srv",task_group="g"} 2.097152e+07
pluginhost_client_allocs_memory_rss{alloc_id="a2",job="web",task="srv",task_group="g"} 0
# HELP pluginhost_client_allocs_cpu_total_ticks cpu_total_percent in MHz of this machine's cores, comparable with the task's cpu.
# TYPE pluginhost_client_allocs_cpu_total_ticks gauge
pluginhost_client_allocs_cpu_total_ticks{alloc_id="a1",job="web",task="srv",task_group="g"} 210
pluginhost_client_allocs_cpu_total_ticks{alloc_id="a2",job="web",task="srv",task_group="g"} 0
# HELP pluginhost_client_allocs_cpu_user User-mode CPU of a running task's cgroup, percent of one core, as cpu_total_percent.
# TYPE pluginhost_client_allocs_cpu_user gauge
pluginhost_client_allocs_cpu_user{alloc_id="a1",job="web",task="srv",task_group="g"} 8
pluginhost_client_allocs_cpu_user{alloc_id="a2",job="web",task="srv",task_group="g"} 0
# HELP pluginhost_client_allocs_oom_killed Task launches ended by the kernel's OOM killer (a process of the task's cgroup was OOM-killed).
# TYPE pluginhost_client_allocs_oom_killed counter
pluginhost_client_allocs_oom_killed{job="web",task="srv",task_group="g"} 2
`
	if err := testutil.GatherAndCompare(m.Gatherer(), strings.NewReader(want),
		"pluginhost_client_allocs_memory_rss", "pluginhost_client_allocs_cpu_total_ticks",
		"pluginhost_client_allocs_cpu_user", "pluginhost_client_allocs_oom_killed"); err != nil {
		t.Fatal(err)
	}

	usage = usage[:1]
	if n, err := testutil.GatherAndCount(m.Gatherer(), "pluginhost_client_allocs_memory_usage"); err != nil || n != 1 {
		t.Fatalf("after a2 stopped: %d memory_usage series (%v), want 1", n, err)
	}
}

// The pids gauges are reported for a task whose cgroup counts its
// processes, and left out for one whose host cannot.
func TestTaskUsagePidsGauges(t *testing.T) {
	m := New()
	usage := []TaskUsage{
		{AllocID: "a1", Job: "web", Group: "g", Task: "srv",
			Stats: &taskrunner.TaskStats{Stats: cgroup.Stats{PidsCurrent: 12, PidsLimit: 2048, PidsMeasured: true}}},
		{AllocID: "a2", Job: "web", Group: "g", Task: "srv",
			Stats: &taskrunner.TaskStats{Stats: cgroup.Stats{PidsCurrent: 3, PidsMeasured: true}}},
		{AllocID: "a3", Job: "web", Group: "g", Task: "srv", Stats: &taskrunner.TaskStats{}},
	}
	if err := m.WatchTaskUsage(func() []TaskUsage { return usage }); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP pluginhost_client_allocs_pids_current Processes and threads in a running task's cgroup (pids.current); only where the pids controller counts them.
# TYPE pluginhost_client_allocs_pids_current gauge
pluginhost_client_allocs_pids_current{alloc_id="a1",job="web",task="srv",task_group="g"} 12
pluginhost_client_allocs_pids_current{alloc_id="a2",job="web",task="srv",task_group="g"} 3
# HELP pluginhost_client_allocs_pids_limit The most processes and threads a running task's cgroup may hold (pids.max: the agent's pids_limit), 0 for no limit.
# TYPE pluginhost_client_allocs_pids_limit gauge
pluginhost_client_allocs_pids_limit{alloc_id="a1",job="web",task="srv",task_group="g"} 2048
pluginhost_client_allocs_pids_limit{alloc_id="a2",job="web",task="srv",task_group="g"} 0
`
	if err := testutil.GatherAndCompare(m.Gatherer(), strings.NewReader(want),
		"pluginhost_client_allocs_pids_current", "pluginhost_client_allocs_pids_limit"); err != nil {
		t.Fatal(err)
	}
	// a3 still has its memory and CPU gauges.
	if n, err := testutil.GatherAndCount(m.Gatherer(), "pluginhost_client_allocs_memory_rss"); err != nil || n != 3 {
		t.Fatalf("%d memory_rss series (%v), want 3", n, err)
	}
}
