package jobs

import (
	"fmt"
	"path"
	"path/filepath"

	"github.com/pluginhost/pluginhost/host/jobspec"
)

// Warnings are what the agent accepts but runs differently from Nomad,
// said at submission rather than discovered later.
func Warnings(job *jobspec.Job) []string {
	out := jobspec.NomadWarnings(job)
	for _, g := range job.TaskGroups {
		if u := g.Update; u != nil && u.MaxParallel > 0 && u.MaxParallel < g.Count {
			out = append(out, fmt.Sprintf("group %q: update.max_parallel = %d is not followed: pluginhost starts all %d new allocations at once and stops the old ones when all are healthy",
				g.Name, u.MaxParallel, g.Count))
		}
	}
	return out
}

// Notes say where pluginhost does more than Nomad with this job, for
// `job validate`: behaviour a Nomad user would not assume.
func Notes(job *jobspec.Job) []string {
	var out []string
	for _, g := range job.TaskGroups {
		for _, t := range g.Tasks {
			for _, vm := range t.VolumeMounts {
				where := vm.Destination
				if !filepath.IsAbs(where) {
					where = "<task dir>/" + where
				}
				out = append(out, fmt.Sprintf("group %q task %q: volume %q is bind-mounted at %s in a mount namespace of the task's own, before it starts (as Nomad's exec driver mounts it inside the task's chroot)",
					g.Name, t.Name, vm.Volume, where))
			}
			if note := jobspec.GoPluginNote(t); note != "" {
				out = append(out, fmt.Sprintf("group %q: %s", g.Name, note))
			}
		}
	}
	return out
}

// DatacenterMatches applies Nomad's datacenter globs to this agent's.
func DatacenterMatches(dc string, patterns []string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if ok, err := path.Match(p, dc); err == nil && ok {
			return true
		}
	}
	return false
}
