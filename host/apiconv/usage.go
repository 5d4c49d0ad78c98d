package apiconv

import (
	"slices"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/cgroup"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// AllocResourceUsage is an allocation's task samples in the API's terms,
// with their sum for the allocation.
func AllocResourceUsage(samples map[string]*taskrunner.TaskStats, m cgroup.Machine) *api.AllocResourceUsage {
	out := &api.AllocResourceUsage{
		ResourceUsage: &api.ResourceUsage{MemoryStats: &api.MemoryStats{}, CpuStats: &api.CpuStats{}},
		Tasks:         make(map[string]*api.TaskResourceUsage, len(samples)),
	}
	sum := out.ResourceUsage
	unlimited := false
	for task, s := range samples {
		ru := ResourceUsage(s, m)
		ts := s.Time.UnixNano()
		out.Tasks[task] = &api.TaskResourceUsage{ResourceUsage: ru, Timestamp: ts}
		out.Timestamp = max(out.Timestamp, ts)
		m, c := sum.MemoryStats, sum.CpuStats
		m.RSS += ru.MemoryStats.RSS
		m.Cache += ru.MemoryStats.Cache
		m.Swap += ru.MemoryStats.Swap
		m.MappedFile += ru.MemoryStats.MappedFile
		m.Usage += ru.MemoryStats.Usage
		m.MaxUsage += ru.MemoryStats.MaxUsage
		m.KernelUsage += ru.MemoryStats.KernelUsage
		m.KernelMaxUsage += ru.MemoryStats.KernelMaxUsage
		m.Measured = union(m.Measured, ru.MemoryStats.Measured)
		c.SystemMode += ru.CpuStats.SystemMode
		c.UserMode += ru.CpuStats.UserMode
		c.Percent += ru.CpuStats.Percent
		c.TotalTicks += ru.CpuStats.TotalTicks
		c.ThrottledPeriods += ru.CpuStats.ThrottledPeriods
		c.ThrottledTime += ru.CpuStats.ThrottledTime
		c.Measured = union(c.Measured, ru.CpuStats.Measured)
		if p := ru.PidsStats; p != nil {
			if sum.PidsStats == nil {
				sum.PidsStats = &api.PidsStats{}
			}
			sum.PidsStats.Current += p.Current
			sum.PidsStats.Limit += p.Limit
			unlimited = unlimited || p.Limit == 0
		}
	}
	if unlimited {
		// One task without a limit makes the allocation's unlimited.
		sum.PidsStats.Limit = 0
	}
	return out
}

// ResourceUsage is a task sample in the API's (Nomad's) terms.
func ResourceUsage(s *taskrunner.TaskStats, m cgroup.Machine) *api.ResourceUsage {
	return &api.ResourceUsage{
		MemoryStats: &api.MemoryStats{
			RSS: s.MemoryRSS, Cache: s.MemoryCache, Swap: s.MemorySwap, MappedFile: s.MemoryMappedFile,
			Usage: s.MemoryUsage, MaxUsage: s.MemoryMaxUsage,
			KernelUsage: s.MemoryKernelUsage, KernelMaxUsage: s.MemoryKernelMaxUsage,
			Measured: slices.Clone(s.MemoryMeasured),
		},
		CpuStats: &api.CpuStats{
			SystemMode: s.CPUSystemPercent, UserMode: s.CPUUserPercent, Percent: s.CPUPercent,
			TotalTicks:       m.Ticks(s.CPUPercent),
			ThrottledPeriods: s.CPUThrottledPeriods, ThrottledTime: s.CPUThrottledNanos,
			Measured: slices.Clone(s.CPUMeasured),
		},
		PidsStats: pidsStats(s),
	}
}

func pidsStats(s *taskrunner.TaskStats) *api.PidsStats {
	if !s.PidsMeasured {
		return nil
	}
	return &api.PidsStats{Current: s.PidsCurrent, Limit: s.PidsLimit}
}

func union(a, b []string) []string {
	for _, s := range b {
		if !slices.Contains(a, s) {
			a = append(a, s)
		}
	}
	return a
}
