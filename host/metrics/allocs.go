package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// TaskUsage is one running task's cgroup sample, for Nomad's
// client.allocs.memory.* and client.allocs.cpu.* gauges.
type TaskUsage struct {
	AllocID, Job, Group, Task string
	Stats                     *taskrunner.TaskStats
	// TotalTicks is Stats.CPUPercent in MHz of this machine's cores.
	TotalTicks float64
}

// allocLabels are Nomad's labels of its per-allocation gauges. alloc_id is
// unbounded over time, but a gauge series lives only as long as its task
// runs: the collector reports the running tasks of each scrape.
var allocLabels = []string{"alloc_id", "job", "task_group", "task"}

// allocGauge is one client.allocs.* gauge and how to read it.
type allocGauge struct {
	desc *prometheus.Desc
	read func(u *TaskUsage) float64
	// measured, if set, says whether the sample has the figure: a gauge
	// of 0 would claim a count that nothing took.
	measured func(u *TaskUsage) bool
}

func newAllocGauges() []allocGauge {
	g := func(name, help string, read func(u *TaskUsage) float64) allocGauge {
		return allocGauge{desc: prometheus.NewDesc(Namespace+"_client_allocs_"+name, help, allocLabels, nil), read: read}
	}
	pids := func(name, help string, read func(u *TaskUsage) float64) allocGauge {
		a := g(name, help, read)
		a.measured = func(u *TaskUsage) bool { return u.Stats.PidsMeasured }
		return a
	}
	return []allocGauge{
		g("memory_rss", "Anonymous memory of a running task's cgroup, bytes (v1 total_rss, v2 anon).",
			func(u *TaskUsage) float64 { return float64(u.Stats.MemoryRSS) }),
		g("memory_cache", "Page cache of a running task's cgroup, bytes.",
			func(u *TaskUsage) float64 { return float64(u.Stats.MemoryCache) }),
		g("memory_swap", "Swap used by a running task's cgroup, bytes.",
			func(u *TaskUsage) float64 { return float64(u.Stats.MemorySwap) }),
		g("memory_usage", "Memory charged to a running task's cgroup, bytes: what its limit is compared with.",
			func(u *TaskUsage) float64 { return float64(u.Stats.MemoryUsage) }),
		g("memory_max_usage", "Peak memory charged to a running task's cgroup, bytes (0 where the kernel keeps no peak).",
			func(u *TaskUsage) float64 { return float64(u.Stats.MemoryMaxUsage) }),
		g("memory_kernel_usage", "Kernel memory of a running task's cgroup, bytes.",
			func(u *TaskUsage) float64 { return float64(u.Stats.MemoryKernelUsage) }),
		g("memory_kernel_max_usage", "Peak kernel memory of a running task's cgroup, bytes (v1 only).",
			func(u *TaskUsage) float64 { return float64(u.Stats.MemoryKernelMaxUsage) }),
		g("cpu_total_percent", "CPU used by a running task's cgroup since an earlier sample (at least 1 s before), percent of one core.",
			func(u *TaskUsage) float64 { return u.Stats.CPUPercent }),
		g("cpu_system", "System-mode CPU of a running task's cgroup, percent of one core, as cpu_total_percent.",
			func(u *TaskUsage) float64 { return u.Stats.CPUSystemPercent }),
		g("cpu_user", "User-mode CPU of a running task's cgroup, percent of one core, as cpu_total_percent.",
			func(u *TaskUsage) float64 { return u.Stats.CPUUserPercent }),
		g("cpu_throttled_time", "Time a running task's cgroup was throttled by a CPU quota since it was made, nanoseconds.",
			func(u *TaskUsage) float64 { return float64(u.Stats.CPUThrottledNanos) }),
		g("cpu_throttled_periods", "CPU quota periods in which a running task's cgroup was throttled since it was made.",
			func(u *TaskUsage) float64 { return float64(u.Stats.CPUThrottledPeriods) }),
		g("cpu_total_ticks", "cpu_total_percent in MHz of this machine's cores, comparable with the task's cpu.",
			func(u *TaskUsage) float64 { return u.TotalTicks }),
		pids("pids_current", "Processes and threads in a running task's cgroup (pids.current); only where the pids controller counts them.",
			func(u *TaskUsage) float64 { return float64(u.Stats.PidsCurrent) }),
		pids("pids_limit", "The most processes and threads a running task's cgroup may hold (pids.max: the agent's pids_limit), 0 for no limit.",
			func(u *TaskUsage) float64 { return float64(u.Stats.PidsLimit) }),
	}
}

// WatchTaskUsage reports Nomad's client.allocs.memory.* and
// client.allocs.cpu.* gauges of every running task, and our
// client.allocs.pids_* ones, sampled by usage when the registry is
// gathered (no goroutine polls the cgroups between scrapes).
func (m *Metrics) WatchTaskUsage(usage func() []TaskUsage) error {
	gauges := newAllocGauges()
	descs := make([]*prometheus.Desc, len(gauges))
	for i, g := range gauges {
		descs[i] = g.desc
	}
	return m.register("task usage", collectorFunc{
		descs: descs,
		collect: func(ch chan<- prometheus.Metric) {
			for _, u := range usage() {
				if u.Stats == nil {
					continue
				}
				for _, g := range gauges {
					if g.measured != nil && !g.measured(&u) {
						continue
					}
					ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, g.read(&u), u.AllocID, u.Job, u.Group, u.Task)
				}
			}
		},
	})
}

// TaskOOMKilled implements taskrunner.OOMMetrics.
func (m *Metrics) TaskOOMKilled(t taskrunner.TaskLabels) {
	m.oomKills.WithLabelValues(t.Job, t.Group, t.Task).Inc()
}
