package host

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/cgroup"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// AllocStats implements host/api.Backend: a sample of the cgroup of every
// running task of the allocation.
func (a *Agent) AllocStats(_ context.Context, id string) (*api.AllocResourceUsage, error) {
	e, err := a.lookupAlloc(id)
	if err != nil {
		return nil, err
	}
	samples, err := e.runner.Stats()
	if err != nil {
		// One unreadable group must not hide the others' figures.
		a.logger.Warn("reading task stats", "alloc_id", e.runner.ID(), "error", err)
	}
	out := &api.AllocResourceUsage{
		ResourceUsage: &api.ResourceUsage{MemoryStats: &api.MemoryStats{}, CpuStats: &api.CpuStats{}},
		Tasks:         make(map[string]*api.TaskResourceUsage, len(samples)),
	}
	sum := out.ResourceUsage
	for task, s := range samples {
		ru := a.resourceUsage(s)
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
	}
	return out, nil
}

// resourceUsage is a task sample in the API's (Nomad's) terms.
func (a *Agent) resourceUsage(s *taskrunner.TaskStats) *api.ResourceUsage {
	return &api.ResourceUsage{
		MemoryStats: &api.MemoryStats{
			RSS: s.MemoryRSS, Cache: s.MemoryCache, Swap: s.MemorySwap, MappedFile: s.MemoryMappedFile,
			Usage: s.MemoryUsage, MaxUsage: s.MemoryMaxUsage,
			KernelUsage: s.MemoryKernelUsage, KernelMaxUsage: s.MemoryKernelMaxUsage,
			Measured: slices.Clone(s.MemoryMeasured),
		},
		CpuStats: &api.CpuStats{
			SystemMode: s.CPUSystemPercent, UserMode: s.CPUUserPercent, Percent: s.CPUPercent,
			TotalTicks:       a.ticks(s.CPUPercent),
			ThrottledPeriods: s.CPUThrottledPeriods, ThrottledTime: s.CPUThrottledNanos,
			Measured: slices.Clone(s.CPUMeasured),
		},
	}
}

// ticks is a CPU percentage in MHz of this machine's cores, Nomad's
// TotalTicks.
func (a *Agent) ticks(percent float64) float64 {
	return cgroup.TicksConsumed(percent, int(a.cpuMHz)*a.cpuCores, a.cpuCores)
}

func union(a, b []string) []string {
	for _, s := range b {
		if !slices.Contains(a, s) {
			a = append(a, s)
		}
	}
	return a
}

// cpuFingerprint is this machine's core count and one core's clock in
// MHz, as Nomad's cpu fingerprint reads them: the clock is the highest
// the kernel's cpufreq reports (cpuinfo_max_freq, kHz), else the "cpu
// MHz" of /proc/cpuinfo (virtual machines often have no cpufreq); 0 when
// neither says.
func cpuFingerprint() (mhz float64, cores int) {
	cores = runtime.NumCPU()
	if b, err := os.ReadFile("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"); err == nil {
		if khz, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64); err == nil && khz > 0 {
			return khz / 1000, cores
		}
	}
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0, cores
	}
	return cpuinfoMHz(b), cores
}

// cpuinfoMHz is the first "cpu MHz" of /proc/cpuinfo's text, 0 if none.
func cpuinfoMHz(b []byte) float64 {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(k) != "cpu MHz" {
			continue
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			return f
		}
	}
	return 0
}
