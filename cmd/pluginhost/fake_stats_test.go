package main

import (
	"context"

	"github.com/pluginhost/pluginhost/api"
)

// AllocStats implements host/api.Backend: every running task uses 12 MHz and
// 24 MiB, measured as a v1 cgroup measures them (no Swap without swap
// accounting), and holds 3 processes and threads of its 2048.
func (f *fakeAgent) AllocStats(ctx context.Context, id string) (*api.AllocResourceUsage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.allocs[id]
	if !ok {
		return nil, api.ErrNotFound
	}
	out := &api.AllocResourceUsage{Tasks: map[string]*api.TaskResourceUsage{}}
	for name, ts := range a.TaskStates {
		if ts.State != api.TaskStateRunning {
			continue
		}
		out.Tasks[name] = &api.TaskResourceUsage{ResourceUsage: &api.ResourceUsage{
			MemoryStats: &api.MemoryStats{RSS: 24 << 20, Cache: 1 << 20, MappedFile: 512 << 10, Usage: 26 << 20, MaxUsage: 30 << 20,
				KernelUsage: 300 << 10, KernelMaxUsage: 400 << 10,
				Measured: []string{"RSS", "Cache", "Mapped File", "Usage", "Max Usage", "Kernel Usage", "Kernel Max Usage"}},
			CpuStats: &api.CpuStats{SystemMode: 0.25, UserMode: 0.325, Percent: 0.575, TotalTicks: 12.9, ThrottledPeriods: 3, ThrottledTime: 4000,
				Measured: []string{"System Mode", "User Mode", "Percent", "Throttled Periods", "Throttled Time"}},
			PidsStats: &api.PidsStats{Current: 3, Limit: 2048},
		}}
	}
	return out, nil
}
