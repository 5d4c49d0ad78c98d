package jobspec

import "fmt"

// NomadWarnings lists what pluginhost runs but Nomad would refuse or run
// differently, job by task, for `job validate` and `job run` to print. The
// job is valid here; each warning says what to change before moving it.
func NomadWarnings(job *Job) []string {
	var out []string
	for _, g := range job.TaskGroups {
		if g == nil {
			continue
		}
		mounting := false // a task of the group that Nomad lets mount
		var rawMounts []*Task
		for _, t := range g.Tasks {
			if t == nil {
				continue
			}
			if t.Driver == DriverExec {
				mounting = true
			} else if len(t.VolumeMounts) > 0 {
				rawMounts = append(rawMounts, t)
			}
		}
		for _, t := range rawMounts {
			// Nomad's raw_exec has MountConfigs = MountConfigSupportNone
			// (drivers/rawexec/driver.go): its volume hook refuses the task
			// ("task driver \"raw_exec\" for \"t\" does not support CSI",
			// client/allocrunner/taskrunner/volume_hook.go) and, when no
			// task of the group can mount, the allocation's csi_hook fails
			// it before anything runs ("no task supports CSI",
			// client/allocrunner/csi_hook.go).
			nomadErr := fmt.Sprintf("task driver %q for %q does not support CSI", DriverRawExec, t.Name)
			if !mounting {
				nomadErr = "no task supports CSI"
			}
			out = append(out, fmt.Sprintf("group %q task %q: Nomad refuses this job (%q): its %s driver cannot mount volumes, so volume_mount works here only; use driver = \"exec\" to mount on both",
				g.Name, t.Name, nomadErr, nomadDriverName(t.Driver)))
		}
	}
	return out
}
