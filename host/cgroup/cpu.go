package cgroup

import "math"

// The kernel's bounds for v1 cpu.shares (MIN_SHARES, MAX_SHARES = 1<<18)
// and v2 cpu.weight (CGROUP_WEIGHT_MIN/MAX), and their defaults.
const (
	minShares     = 2
	maxShares     = 262144
	defaultShares = 1024
	minWeight     = 1
	maxWeight     = 10000
	defaultWeight = 100
)

// CPUShares turns a task's cpu (MHz) into v1 cpu.shares. Nomad writes the
// MHz figure as the shares unchanged (scheduler/feasible/rank.go:
// CpuShares = task.Resources.CPU; drivers/shared/executor/
// executor_universal_linux.go configureCG1 writes it to cpu.shares), so a
// 500 MHz task weighs 500 against a 100 MHz one. Values are clamped to the
// kernel's range, which the kernel would do anyway; 0 means the kernel's
// default, 1024.
func CPUShares(mhz int) uint64 {
	switch {
	case mhz <= 0:
		return defaultShares
	case mhz < minShares:
		return minShares
	case mhz > maxShares:
		return maxShares
	}
	return uint64(mhz)
}

// CPUWeight turns v1 cpu.shares into v2 cpu.weight the way Nomad does:
// executor_universal_linux.go configureCG2 calls
// github.com/opencontainers/cgroups ConvertCPUSharesToCgroupV2Value, and
// Nomad (main, go.mod) pins opencontainers/cgroups v0.0.7, whose
// conversion is no longer runc's old linear 1 + ((shares-2)*9999)/262142
// but a quadratic in log2(shares) that maps 2 → 1, 1024 → 100 (the two
// defaults agree) and 262144 → 10000 (runc PR 4785, after kubernetes
// issue 131216: the linear one gave a default-weight pod weight 39):
//
//	weight = ceil(10^((l² + 125·l)/612 − 7/34)), l = log2(shares)
//
// So 100 MHz is weight 17 (the linear formula gave 4) and 1024 MHz is 100.
func CPUWeight(shares uint64) uint64 {
	switch {
	case shares == 0:
		return defaultWeight
	case shares <= minShares:
		return minWeight
	case shares >= maxShares:
		return maxWeight
	}
	l := math.Log2(float64(shares))
	w := uint64(math.Ceil(math.Pow(10, (l*l+125*l)/612.0-7.0/34.0)))
	return min(max(w, minWeight), maxWeight)
}

// CPUPercent is the CPU used between two samples as a percentage of one
// core (200 = two cores busy), total, user and system, as Nomad's
// cpustats.Tracker computes client.allocs.cpu.total_percent, .user and
// .system. It is 0 when the samples are out of order.
func CPUPercent(prev, cur Stats) (total, user, system float64) {
	dt := cur.Time.Sub(prev.Time).Nanoseconds()
	if dt <= 0 {
		return 0, 0, 0
	}
	pct := func(a, b uint64) float64 {
		if b <= a {
			return 0
		}
		return float64(b-a) / float64(dt) * 100
	}
	return pct(prev.CPUUsageNanos, cur.CPUUsageNanos),
		pct(prev.CPUUserNanos, cur.CPUUserNanos),
		pct(prev.CPUSystemNanos, cur.CPUSystemNanos)
}

// TicksConsumed turns a CPUPercent total into MHz used, Nomad's
// client.allocs.cpu.total_ticks (client/lib/cpustats TicksConsumed:
// percent/100 × total compute / cores), comparable with the task's cpu.
func TicksConsumed(percent float64, totalMHz, cores int) float64 {
	if cores <= 0 {
		return 0
	}
	return percent / 100 * float64(totalMHz) / float64(cores)
}
