package cgroup

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"time"
)

// Stats is one sample of a group's use, with the fields Nomad's
// `alloc status -stats` and client.allocs.memory.* / client.allocs.cpu.*
// metrics show. Memory is in bytes; CPU times are cumulative since the
// group was made, in nanoseconds (percentages need two samples: see
// CPUPercent).
type Stats struct {
	// Time is when the sample was read.
	Time time.Time

	// MemoryRSS is anonymous memory (v1 memory.stat total_rss, v2 anon).
	MemoryRSS uint64
	// MemoryCache is page cache, tmpfs included (v1 total_cache, v2 file).
	MemoryCache uint64
	// MemorySwap is swap in use (v1 total_swap, v2 memory.swap.current).
	MemorySwap uint64
	// MemoryMappedFile is mapped page cache (v1 total_mapped_file, v2
	// file_mapped).
	MemoryMappedFile uint64
	// MemoryUsage is what the limit is compared with (v1
	// memory.usage_in_bytes, v2 memory.current).
	MemoryUsage uint64
	// MemoryMaxUsage is the peak usage (v1 memory.max_usage_in_bytes, v2
	// memory.peak from Linux 5.19).
	MemoryMaxUsage uint64
	// MemoryKernelUsage and MemoryKernelMaxUsage are kernel memory (v1
	// memory.kmem.*; v2 memory.stat kernel, no peak).
	MemoryKernelUsage    uint64
	MemoryKernelMaxUsage uint64

	// CPUUsageNanos, CPUUserNanos and CPUSystemNanos are CPU time used (v1
	// cpuacct.usage, .usage_user, .usage_sys; v2 cpu.stat usage_usec,
	// user_usec, system_usec).
	CPUUsageNanos  uint64
	CPUUserNanos   uint64
	CPUSystemNanos uint64
	// CPUThrottledPeriods and CPUThrottledNanos count CFS quota throttling
	// (cpu.stat nr_throttled and throttled_time / throttled_usec). Zero
	// until a CPU quota is set, which nothing here does yet.
	CPUThrottledPeriods uint64
	CPUThrottledNanos   uint64

	// MemoryMeasured and CPUMeasured name, in Nomad's words, the fields this
	// cgroup setup really measures, for the Measured lists of a
	// TaskResourceUsage: a zero in a measured field is a real zero, a zero
	// elsewhere means unknown. Memory: "RSS", "Cache", "Swap", "Mapped
	// File", "Usage", "Max Usage", "Kernel Usage", "Kernel Max Usage"; CPU:
	// "System Mode", "User Mode", "Percent", "Throttled Periods",
	// "Throttled Time".
	MemoryMeasured []string
	CPUMeasured    []string

	// PidsCurrent is how many processes and threads are in the group
	// (pids.current) and PidsLimit how many it may hold (pids.max, 0 for
	// no limit). Both need the pids controller: PidsMeasured says whether
	// they were read.
	PidsCurrent  uint64
	PidsLimit    uint64
	PidsMeasured bool
}

// Stats reads the group's memory, CPU and process use. Files a kernel
// lacks (v2 memory.peak before 5.19, v1 kmem accounting when disabled)
// leave their fields zero and unmeasured; only a missing group is an
// error.
func (g *Group) Stats() (Stats, error) {
	s := Stats{Time: time.Now()}
	var err error
	if g.m.version == 1 {
		err = g.statsV1(&s)
	} else {
		err = g.statsV2(&s)
	}
	if err == nil {
		err = g.pidsStats(&s)
	}
	if err != nil {
		return Stats{}, fmt.Errorf("stats of cgroup %s: %w", g.path, err)
	}
	return s, nil
}

// pidsStats reads pids.current and pids.max, the same files on v1 and v2.
func (g *Group) pidsStats(s *Stats) error {
	if g.pids == "" {
		return nil
	}
	cur, err := readUint(filepath.Join(g.pids, "pids.current"))
	if err != nil {
		return err
	}
	max, err := readUint(filepath.Join(g.pids, "pids.max"))
	if err != nil {
		return err
	}
	if max == ^uint64(0) {
		max = 0
	}
	s.PidsCurrent, s.PidsLimit, s.PidsMeasured = cur, max, true
	return nil
}

func (g *Group) statsV1(s *Stats) error {
	if g.mem == "" {
		return fmt.Errorf("not in the memory hierarchy: %w", fs.ErrNotExist)
	}
	ms, err := readKV(filepath.Join(g.mem, "memory.stat"))
	if err != nil {
		return err
	}
	// total_* include descendants; a task's group has none unless the task
	// makes them, and then they count against its limit too.
	pick := func(k string) uint64 {
		if v, ok := ms["total_"+k]; ok {
			return v
		}
		return ms[k]
	}
	s.MemoryRSS, s.MemoryCache, s.MemorySwap, s.MemoryMappedFile =
		pick("rss"), pick("cache"), pick("swap"), pick("mapped_file")
	s.MemoryMeasured = []string{"RSS", "Cache", "Mapped File"}
	if _, ok := ms["total_swap"]; ok {
		s.MemoryMeasured = append(s.MemoryMeasured, "Swap")
	}
	if s.MemoryUsage, err = readUint(filepath.Join(g.mem, "memory.usage_in_bytes")); err != nil {
		return err
	}
	if s.MemoryMaxUsage, err = readUint(filepath.Join(g.mem, "memory.max_usage_in_bytes")); err != nil {
		return err
	}
	s.MemoryMeasured = append(s.MemoryMeasured, "Usage", "Max Usage")
	if v, err := readUint(filepath.Join(g.mem, "memory.kmem.usage_in_bytes")); err == nil {
		s.MemoryKernelUsage = v
		s.MemoryMeasured = append(s.MemoryMeasured, "Kernel Usage")
	}
	if v, err := readUint(filepath.Join(g.mem, "memory.kmem.max_usage_in_bytes")); err == nil {
		s.MemoryKernelMaxUsage = v
		s.MemoryMeasured = append(s.MemoryMeasured, "Kernel Max Usage")
	}

	if g.cpuacct != "" {
		if s.CPUUsageNanos, err = readUint(filepath.Join(g.cpuacct, "cpuacct.usage")); err != nil {
			return err
		}
		u, uerr := readUint(filepath.Join(g.cpuacct, "cpuacct.usage_user"))
		k, kerr := readUint(filepath.Join(g.cpuacct, "cpuacct.usage_sys"))
		if uerr != nil || kerr != nil {
			// Before Linux 4.7 only cpuacct.stat, in USER_HZ (always 100)
			// ticks.
			st, err := readKV(filepath.Join(g.cpuacct, "cpuacct.stat"))
			if err != nil {
				return err
			}
			u, k = st["user"]*1e7, st["system"]*1e7
		}
		s.CPUUserNanos, s.CPUSystemNanos = u, k
		s.CPUMeasured = []string{"System Mode", "User Mode", "Percent"}
	}
	if g.cpu != "" {
		cs, err := readKV(filepath.Join(g.cpu, "cpu.stat"))
		if err != nil {
			return err
		}
		s.CPUThrottledPeriods, s.CPUThrottledNanos = cs["nr_throttled"], cs["throttled_time"]
		s.CPUMeasured = append(s.CPUMeasured, "Throttled Periods", "Throttled Time")
	}
	return nil
}

func (g *Group) statsV2(s *Stats) error {
	dir := g.dirs[0]
	if g.mem != "" {
		ms, err := readKV(filepath.Join(dir, "memory.stat"))
		if err != nil {
			return err
		}
		s.MemoryRSS, s.MemoryCache, s.MemoryMappedFile, s.MemoryKernelUsage =
			ms["anon"], ms["file"], ms["file_mapped"], ms["kernel"]
		s.MemoryMeasured = []string{"RSS", "Cache", "Mapped File"}
		if _, ok := ms["kernel"]; ok {
			s.MemoryMeasured = append(s.MemoryMeasured, "Kernel Usage")
		}
		if s.MemoryUsage, err = readUint(filepath.Join(dir, "memory.current")); err != nil {
			return err
		}
		s.MemoryMeasured = append(s.MemoryMeasured, "Usage")
		if v, err := readUint(filepath.Join(dir, "memory.peak")); err == nil {
			s.MemoryMaxUsage = v
			s.MemoryMeasured = append(s.MemoryMeasured, "Max Usage")
		}
		if v, err := readUint(filepath.Join(dir, "memory.swap.current")); err == nil {
			s.MemorySwap = v
			s.MemoryMeasured = append(s.MemoryMeasured, "Swap")
		}
	}
	// usage_usec, user_usec and system_usec are there without the cpu
	// controller; the throttling lines come with it.
	cs, err := readKV(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return err
	}
	s.CPUUsageNanos, s.CPUUserNanos, s.CPUSystemNanos =
		cs["usage_usec"]*1000, cs["user_usec"]*1000, cs["system_usec"]*1000
	s.CPUMeasured = []string{"System Mode", "User Mode", "Percent"}
	if g.cpu != "" {
		s.CPUThrottledPeriods, s.CPUThrottledNanos = cs["nr_throttled"], cs["throttled_usec"]*1000
		s.CPUMeasured = append(s.CPUMeasured, "Throttled Periods", "Throttled Time")
	}
	return nil
}
