package jobspec

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
)

// Warnings are what the agent accepts but runs differently from Nomad,
// said at submission rather than discovered later.
func Warnings(job *Job) []string {
	out := NomadWarnings(job)
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
func Notes(job *Job) []string {
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
			if note := GoPluginNote(t); note != "" {
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

// CheckCommands says which raw_exec and go_plugin tasks name a command
// that cannot run on this machine, as resolve finds it (the drivers'
// lookup: a path, or a bare name in the task's PATH, then the agent's):
// such a task restarted for its whole restart policy before `job run`
// gave up (36 s for a bad absolute path). notes say which binary each
// bare name runs: `plugin init greeter`'s job ran go-plugin's example
// greeter, first on the dev agent's PATH. A command with ${...} is
// resolved only at launch, and an exec task's inside its own root: both
// are left out.
func CheckCommands(job *Job, resolve func(command string) (string, error)) (warnings, notes []string) {
	for _, g := range job.TaskGroups {
		for _, t := range g.Tasks {
			if t.Driver == DriverExec || t.Config == nil || t.Config.Command == "" || strings.Contains(t.Config.Command, "${") {
				continue
			}
			if c := t.Config.Command; strings.Contains(c, "/") && !filepath.IsAbs(c) {
				continue // relative to the task's work_dir, made at launch
			}
			path, err := resolve(t.Config.Command)
			switch {
			case err != nil:
				warnings = append(warnings, fmt.Sprintf("group %q task %q: %v: the task cannot start on this machine", g.Name, t.Name, err))
			case !strings.Contains(t.Config.Command, "/"):
				notes = append(notes, fmt.Sprintf("group %q task %q: command %q runs %s here (a bare name is looked up in the task's PATH, then the agent's)",
					g.Name, t.Name, t.Config.Command, path))
			}
		}
	}
	return warnings, notes
}
