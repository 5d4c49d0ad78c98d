package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pluginhost/pluginhost/api"
)

// taskResources is Nomad's "Task Resources" table: the task's cpu and
// memory, led by what it uses now when the agent has a sample ("12/100
// MHz", "24 MiB/300 MiB"), and, with a sample from a host that counts
// them, a Pids column Nomad has not: the task's processes and threads
// against the agent's pids_limit ("3/2048", or "3" without a limit). ""
// when the allocation does not say the task's resources.
func taskResources(res *api.Resources, usage *api.TaskResourceUsage) string {
	if res == nil {
		return ""
	}
	cpu := strconv.Itoa(res.CPU)
	mem := iBytes(uint64(res.MemoryMB) << 20)
	if usage != nil && usage.ResourceUsage != nil {
		if cs := usage.ResourceUsage.CpuStats; cs != nil {
			cpu = fmt.Sprintf("%v/%s", math.Floor(cs.TotalTicks), cpu)
		}
		if ms := usage.ResourceUsage.MemoryStats; ms != nil {
			mem = iBytes(ms.RSS) + "/" + mem
		}
	}
	header, row := "CPU|Memory", cpu+" MHz|"+mem
	if res.MemoryMaxMB > 0 {
		// memory is then the reservation and memory_max the hard limit.
		header, row = header+"|Memory Max", row+"|"+iBytes(uint64(res.MemoryMaxMB)<<20)
	}
	if usage != nil && usage.ResourceUsage != nil && usage.ResourceUsage.PidsStats != nil {
		ps := usage.ResourceUsage.PidsStats
		pids := strconv.FormatUint(ps.Current, 10)
		if ps.Limit > 0 {
			pids += "/" + strconv.FormatUint(ps.Limit, 10)
		}
		header, row = header+"|Pids", row+"|"+pids
	}
	return "Task Resources:\n" + formatList([]string{header, row})
}

// memoryFields and cpuFields are the Measured names alloc status -stats
// shows, with how to print each.
var memoryFields = map[string]func(*api.MemoryStats) string{
	"RSS":              func(m *api.MemoryStats) string { return iBytes(m.RSS) },
	"Cache":            func(m *api.MemoryStats) string { return iBytes(m.Cache) },
	"Swap":             func(m *api.MemoryStats) string { return iBytes(m.Swap) },
	"Mapped File":      func(m *api.MemoryStats) string { return iBytes(m.MappedFile) },
	"Usage":            func(m *api.MemoryStats) string { return iBytes(m.Usage) },
	"Max Usage":        func(m *api.MemoryStats) string { return iBytes(m.MaxUsage) },
	"Kernel Usage":     func(m *api.MemoryStats) string { return iBytes(m.KernelUsage) },
	"Kernel Max Usage": func(m *api.MemoryStats) string { return iBytes(m.KernelMaxUsage) },
}

var cpuFields = map[string]func(*api.CpuStats) string{
	"Percent":           func(c *api.CpuStats) string { return percent(c.Percent) },
	"System Mode":       func(c *api.CpuStats) string { return percent(c.SystemMode) },
	"User Mode":         func(c *api.CpuStats) string { return percent(c.UserMode) },
	"Throttled Periods": func(c *api.CpuStats) string { return strconv.FormatUint(c.ThrottledPeriods, 10) },
	"Throttled Time":    func(c *api.CpuStats) string { return strconv.FormatUint(c.ThrottledTime, 10) },
}

// detailedUsage is alloc status -stats' "Memory Stats" and "CPU Stats"
// tables, as Nomad prints them: one column per measured field, sorted by
// name. Fields the host does not measure are left out rather than shown
// as a zero that would be a lie.
func detailedUsage(ru *api.ResourceUsage) string {
	if ru == nil {
		return ""
	}
	var parts []string
	if ms := ru.MemoryStats; ms != nil {
		if t := measuredTable(ms.Measured, func(name string) (string, bool) {
			f, ok := memoryFields[name]
			if !ok {
				return "", false
			}
			return f(ms), true
		}); t != "" {
			parts = append(parts, "Memory Stats\n"+t)
		}
	}
	if cs := ru.CpuStats; cs != nil {
		if t := measuredTable(cs.Measured, func(name string) (string, bool) {
			f, ok := cpuFields[name]
			if !ok {
				return "", false
			}
			return f(cs), true
		}); t != "" {
			parts = append(parts, "CPU Stats\n"+t)
		}
	}
	return strings.Join(parts, "\n\n")
}

func measuredTable(measured []string, value func(string) (string, bool)) string {
	names := slices.Sorted(slices.Values(measured))
	names = slices.Compact(names)
	var header, row []string
	for _, n := range names {
		if v, ok := value(n); ok {
			header, row = append(header, n), append(row, v)
		}
	}
	if len(header) == 0 {
		return ""
	}
	return formatList([]string{strings.Join(header, "|"), strings.Join(row, "|")})
}

func percent(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) + "%" }

// iBytes prints a byte count in binary units the way Nomad's CLI does
// (go-humanize's IBytes): "300 MiB", "1.5 GiB", "512 B".
func iBytes(n uint64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	e := int(math.Floor(math.Log(float64(n)) / math.Log(1024)))
	e = min(max(e, 1), len(units))
	val := math.Floor(float64(n)/math.Pow(1024, float64(e))*10+0.5) / 10
	if val < 10 {
		return fmt.Sprintf("%.1f %s", val, units[e-1])
	}
	return fmt.Sprintf("%.0f %s", val, units[e-1])
}
