package api

import (
	"context"
	"net/http"
	"net/url"
)

// AllocResourceUsage is GET /v1/client/allocation/<id>/stats: Nomad's
// shape and field names (api.AllocResourceUsage), read from each running
// task's cgroup. Tasks that are not running, or run without a cgroup,
// are absent from Tasks.
type AllocResourceUsage struct {
	// ResourceUsage sums the tasks' (Measured: the union of theirs).
	ResourceUsage *ResourceUsage
	Tasks         map[string]*TaskResourceUsage
	// Timestamp is the newest task sample's, in Unix nanoseconds.
	Timestamp int64
}

// TaskResourceUsage is one task's sample.
type TaskResourceUsage struct {
	ResourceUsage *ResourceUsage
	Timestamp     int64
	// Pids is Nomad's per-process breakdown. A cgroup measures the task as
	// a whole, so it is left out, as Nomad leaves it empty for tasks it
	// measures by cgroup.
	Pids map[string]*ResourceUsage `json:",omitempty"`
}

// ResourceUsage is memory and CPU use, and the process count.
type ResourceUsage struct {
	MemoryStats *MemoryStats
	CpuStats    *CpuStats
	// PidsStats is not Nomad's, whose client limits no process count: a
	// task's processes and threads against the agent's pids_limit. Nil
	// where the host's cgroups have no pids controller.
	PidsStats *PidsStats `json:",omitempty"`
}

// PidsStats are the processes and threads in a task's cgroup
// (pids.current) and the most it may hold (pids.max: the agent's
// pids_limit when the task started), as Docker's stats API has them;
// Limit 0 means no limit. An allocation's sum adds the tasks' counts and
// limits, and its Limit is 0 if any task has none.
type PidsStats struct {
	Current uint64
	Limit   uint64
}

// MemoryStats is in bytes. Measured names the fields the host's cgroups
// really measure ("RSS", "Cache", "Swap", "Mapped File", "Usage", "Max
// Usage", "Kernel Usage", "Kernel Max Usage"); a zero elsewhere means
// unknown, not zero.
type MemoryStats struct {
	RSS            uint64
	Cache          uint64
	Swap           uint64
	MappedFile     uint64
	Usage          uint64
	MaxUsage       uint64
	KernelUsage    uint64
	KernelMaxUsage uint64
	Measured       []string
}

// CpuStats is Nomad's: SystemMode, UserMode and Percent are percentages of
// one core (200 is two cores busy) since an earlier sample (at least a
// second before); TotalTicks is Percent in MHz of this machine's cores,
// comparable with the task's `cpu`; ThrottledTime is in nanoseconds.
// Measured as in MemoryStats ("System Mode", "User Mode", "Percent",
// "Throttled Periods", "Throttled Time").
type CpuStats struct {
	SystemMode       float64
	UserMode         float64
	TotalTicks       float64
	ThrottledPeriods uint64
	ThrottledTime    uint64
	Percent          float64
	Measured         []string
}

// Resources are a task's `resources` as the allocation was given them
// (Nomad's Allocation.TaskResources): CPU in MHz, memory in MB;
// MemoryMaxMB is memory_max, 0 when not set.
type Resources struct {
	CPU         int
	MemoryMB    int
	MemoryMaxMB int `json:",omitempty"`
}

// AllocStats reads the resource use of an allocation's running tasks
// (Nomad's Allocations().Stats). id may be a unique prefix.
func (c *Client) AllocStats(ctx context.Context, id string) (*AllocResourceUsage, error) {
	var out AllocResourceUsage
	if err := c.do(ctx, http.MethodGet, "/v1/client/allocation/"+url.PathEscape(id)+"/stats", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
