package jobspec

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict"
)

// Problem is one rule a job breaks. Field is in Go field names of Job, such
// as "TaskGroups[0].Tasks[1].Name" or `TaskGroups[0].Volumes["data"].Source`;
// "" is the job itself.
type Problem = hclstrict.Problem

// ValidationError lists every problem of a job, in field order. It is a type
// of its own, not hclstrict's, so callers can tell a refused job from a
// refused volume with errors.As.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string { return hclstrict.ProblemsText(e.Problems, "job") }

// Validate checks every semantic rule of a job: the ones a job file is held
// to once its HCL has been decoded. It is the only home of these rules, so a
// job submitted as JSON is refused exactly when the same job written as HCL
// would be. job must be canonical (see Canonicalize); a nil where the parser
// always fills something in is a problem, not a default. The error is a
// *ValidationError or nil.
func Validate(job *Job) error {
	if ps := validate(job); len(ps) > 0 {
		return &ValidationError{Problems: ps}
	}
	return nil
}

// validation holds the job-specific checks; each adds to the problems and
// carries on, so one call reports everything, as the parser does.
type validation struct {
	hclstrict.Problems
}

func (v *validation) name(field, kind, name string) {
	if bad := nameProblem(name); bad != "" {
		v.Add(field, "Invalid "+kind, "The %s %q %s.", kind, name, bad)
	}
}

// intRange checks a number the job file calls key.
func (v *validation) intRange(field, key string, n, lo, hi int) bool {
	if n < lo || n > hi {
		v.Add(field, "Value out of range", "%q must be between %d and %d, got %d.", key, lo, hi, n)
		return false
	}
	return true
}

// nonNegative is the job file's duration rule; a job file cannot even write
// a negative duration, JSON can.
func (v *validation) nonNegative(field, key string, d time.Duration) bool {
	if d < 0 {
		v.Add(field, "Invalid duration", "%q must not be negative, got %q.", key, d.String())
		return false
	}
	return true
}

// stringMap checks the keys of meta and env maps. A job file can only write
// identifiers there; JSON can write anything, and a key with '=' or NUL
// would change meaning once it becomes an environment variable.
func (v *validation) stringMap(field, block string, m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			v.Add(fmt.Sprintf("%s[%q]", field, k), "Invalid "+block+" key",
				"%s keys must be non-empty and hold no '=' or NUL, got %q.", block, k)
		}
	}
}

func validate(job *Job) []Problem {
	v := &validation{}
	if job == nil {
		v.Null("", "job")
		return v.Problems
	}
	v.name("ID", "job ID", job.ID)
	if job.Name != job.ID {
		v.name("Name", "job name", job.Name)
	}
	switch job.Type {
	case JobTypeService, JobTypeBatch, JobTypeSystem, JobTypeSysBatch:
	default:
		v.Add("Type", "Invalid job type",
			"The job type must be \"service\", \"batch\", \"system\" or \"sysbatch\", got %q.", job.Type)
	}
	if len(job.Datacenters) == 0 {
		v.Add("Datacenters", "Invalid datacenters",
			"The list must not be empty; leave `datacenters` out to run in any datacenter.")
	} else if slices.Contains(job.Datacenters, "") {
		v.Add("Datacenters", "Invalid datacenters", "Datacenter names must not be empty.")
	}
	v.stringMap("Meta", "meta", job.Meta)

	if len(job.TaskGroups) == 0 {
		v.Add("TaskGroups", "Missing group", "Job %q has no `group` block; a job needs at least one.", job.ID)
	}
	if n := len(job.TaskGroups); n > MaxGroups {
		// Validating every group is the work the limit is there to spare.
		summary, detail := tooManyGroups(n)
		v.Add(fmt.Sprintf("TaskGroups[%d]", MaxGroups), summary, "%s", detail)
		return v.Problems
	}
	seen := map[string]bool{}
	var sums jobSize
	for i, g := range job.TaskGroups {
		f := fmt.Sprintf("TaskGroups[%d]", i)
		if g == nil {
			v.Null(f, "group")
			continue
		}
		if seen[g.Name] {
			v.Add(f+".Name", "Duplicate group", "Group %q is defined more than once; group names must be unique in a job.", g.Name)
		}
		seen[g.Name] = true
		v.group(f, job, g)
		if p, over := sums.add(f, g.Name, g.Count, len(g.Tasks)); over {
			v.Problems = append(v.Problems, p)
		}
	}
	return v.Problems
}

// jobSize is the running total of what a job's groups so far ask for.
type jobSize struct {
	allocs, tasks int
	// over is set once a total is over its limit: reported once, at the
	// group that took it over.
	over bool
}

// add adds the group at field f, named name, of count allocations of
// tasks tasks, and returns the problem of the first total it takes over
// its limit.
func (s *jobSize) add(f, name string, count, tasks int) (Problem, bool) {
	if s.over {
		return Problem{}, false
	}
	// A count out of range is reported as such, not again as too many
	// allocations; clamped, it cannot overflow the sums either.
	n := min(max(count, 0), maxCount)
	s.allocs += n
	s.tasks += max(n, 1) * min(tasks, MaxTasksPerGroup+1)
	var ps hclstrict.Problems
	switch {
	case s.allocs > MaxAllocs:
		ps.Add(f+".Count", "Too many allocations",
			"A job may run at most %d allocations, the sum of its groups' counts; with group %q's count of %d this one asks for %d.",
			MaxAllocs, name, count, s.allocs)
	case s.tasks > MaxTasks:
		ps.Add(f, "Too many tasks",
			"A job may have at most %d tasks, a group's tasks counted once for each allocation it runs (once for count 0); with group %q (count %d, %d tasks) this one has %d.",
			MaxTasks, name, count, tasks, s.tasks)
	default:
		return Problem{}, false
	}
	s.over = true
	return ps[0], true
}

func (v *validation) group(f string, job *Job, g *TaskGroup) {
	v.name(f+".Name", "group name", g.Name)
	if v.intRange(f+".Count", "count", g.Count, 0, maxCount) &&
		g.Count > 1 && (job.Type == JobTypeSystem || job.Type == JobTypeSysBatch) {
		v.Add(f+".Count", "Invalid count",
			"A %s job runs at most one allocation per node, so count must be 0 or 1, got %d.", job.Type, g.Count)
	}
	if g.Restart == nil {
		v.Null(f+".Restart", "restart policy")
	} else {
		v.restart(f+".Restart", g.Restart, nil)
	}
	v.stringMap(f+".Meta", "meta", g.Meta)
	if g.Update != nil {
		v.update(f+".Update", g.Update)
	}

	aliases := make([]string, 0, len(g.Volumes))
	for a := range g.Volumes {
		aliases = append(aliases, a)
	}
	slices.Sort(aliases)
	for _, a := range aliases {
		v.volume(fmt.Sprintf("%s.Volumes[%q]", f, a), a, g.Volumes[a])
	}

	if len(g.Tasks) == 0 {
		v.Add(f+".Tasks", "Missing task", "Group %q has no `task` block; a group needs at least one.", g.Name)
	}
	if n := len(g.Tasks); n > MaxTasksPerGroup {
		summary, detail := tooManyTasksInGroup(g.Name, n)
		v.Add(fmt.Sprintf("%s.Tasks[%d]", f, MaxTasksPerGroup), summary, "%s", detail)
		return
	}
	seen := map[string]bool{}
	plugins := map[string]*pluginUse{}
	generic := map[string]string{} // "type/name" → task
	for j, t := range g.Tasks {
		tf := fmt.Sprintf("%s.Tasks[%d]", f, j)
		if t == nil {
			v.Null(tf, "task")
			continue
		}
		if seen[t.Name] {
			v.Add(tf+".Name", "Duplicate task", "Task %q is defined more than once; task names must be unique in a group.", t.Name)
		}
		seen[t.Name] = true
		v.task(tf, g, t)
		if t.CSIPluginConfig != nil {
			v.pluginClash(tf+".CSIPluginConfig", plugins, t)
		}
		if c := t.Config; c != nil && c.Plugin != nil && t.Driver == DriverGoPlugin {
			key := c.Plugin.Type + "/" + c.Plugin.Name
			if prev, dup := generic[key]; dup {
				v.Add(tf+".Config.Plugin", "Duplicate plugin",
					"Task %q already provides plugin %s in this group; one allocation may register a type and name once.", prev, key)
			} else {
				generic[key] = t.Name
			}
		}
	}
}

// restart checks a policy. A task's policy is its group's overlaid with the
// task's own block, so for a task only what differs from the group's (inherited)
// is checked: the group's own mistakes are reported once, at the group.
func (v *validation) restart(f string, p, inherited *RestartPolicy) {
	if inherited != nil && *p == *inherited {
		return
	}
	differs := func(same bool) bool { return inherited == nil || !same }
	ok := true
	if differs(inherited != nil && p.Attempts == inherited.Attempts) {
		ok = v.intRange(f+".Attempts", "attempts", p.Attempts, 0, maxRestartAttempts) && ok
	}
	if differs(inherited != nil && p.Interval == inherited.Interval) {
		ok = v.nonNegative(f+".Interval", "interval", p.Interval) && ok
	}
	if differs(inherited != nil && p.Delay == inherited.Delay) {
		ok = v.nonNegative(f+".Delay", "delay", p.Delay) && ok
	}
	if differs(inherited != nil && p.Mode == inherited.Mode) && p.Mode != RestartModeDelay && p.Mode != RestartModeFail {
		v.Add(f+".Mode", "Invalid restart mode", "The restart mode must be \"delay\" or \"fail\", got %q.", p.Mode)
		ok = false
	}
	if !ok {
		// The consistency rules below would only restate a broken value.
		return
	}
	// Nomad's consistency rules concern the policy as a whole, so the job
	// file reports them at the restart block rather than at one key.
	switch {
	case p.Interval < minRestartInterval:
		v.Add(f+".Interval", "Invalid restart policy", "The restart interval must be at least %s, got %s.", minRestartInterval, p.Interval)
	case p.Attempts == 0 && p.Mode == RestartModeDelay:
		v.Add(f, "Invalid restart policy",
			"Zero attempts with mode \"delay\" is ambiguous (Nomad refuses it); use mode \"fail\" to never restart.")
	case time.Duration(p.Attempts)*p.Delay > p.Interval:
		v.Add(f, "Invalid restart policy",
			"%d attempts with a delay of %s cannot fit in an interval of %s.", p.Attempts, p.Delay, p.Interval)
	}
}

// update applies Nomad's rules to an update block, and refuses what
// pluginhost cannot do (canaries, manual health).
func (v *validation) update(f string, u *UpdateStrategy) {
	v.intRange(f+".MaxParallel", "max_parallel", u.MaxParallel, 0, maxCount)
	switch u.HealthCheck {
	case HealthCheckChecks, HealthCheckTaskStates:
	case "manual":
		v.Add(f+".HealthCheck", "Unsupported health_check",
			"health_check = \"manual\" needs Nomad's deployment promote API, which pluginhost has not; use \"task_states\".")
	default:
		v.Add(f+".HealthCheck", "Invalid health_check", "health_check must be \"checks\" or \"task_states\", got %q.", u.HealthCheck)
	}
	if u.Canary != 0 {
		v.Add(f+".Canary", "Unsupported update setting",
			"pluginhost has no canaries (one machine, one version at a time), so canary must be 0, got %d.", u.Canary)
	}
	ok := v.nonNegative(f+".MinHealthyTime", "min_healthy_time", u.MinHealthyTime)
	ok = v.nonNegative(f+".HealthyDeadline", "healthy_deadline", u.HealthyDeadline) && ok
	ok = v.nonNegative(f+".ProgressDeadline", "progress_deadline", u.ProgressDeadline) && ok
	ok = v.nonNegative(f+".Stagger", "stagger", u.Stagger) && ok
	if !ok {
		return
	}
	switch {
	case u.HealthyDeadline == 0:
		v.Add(f+".HealthyDeadline", "Invalid update block", "healthy_deadline must be longer than zero.")
	case u.MinHealthyTime >= u.HealthyDeadline:
		v.Add(f+".MinHealthyTime", "Invalid update block",
			"min_healthy_time (%s) must be shorter than healthy_deadline (%s).", u.MinHealthyTime, u.HealthyDeadline)
	case u.ProgressDeadline != 0 && u.HealthyDeadline >= u.ProgressDeadline:
		v.Add(f+".HealthyDeadline", "Invalid update block",
			"healthy_deadline (%s) must be shorter than progress_deadline (%s).", u.HealthyDeadline, u.ProgressDeadline)
	}
}

func (v *validation) volume(f, alias string, vol *VolumeRequest) {
	v.name(f+".Name", "volume alias", alias)
	if vol == nil {
		v.Null(f, "volume")
		return
	}
	if vol.Name != alias {
		v.Add(f+".Name", "Invalid volume name", "A volume's name is its alias %q, got %q.", alias, vol.Name)
	}
	if vol.Type != VolumeTypeCSI {
		v.Add(f+".Type", "Unsupported volume type", "pluginhost only supports CSI volumes (type = \"csi\"), got %q.", vol.Type)
	}
	switch {
	case vol.Source == "":
		v.Add(f+".Source", "Invalid volume source", "The volume source must not be empty.")
	case !ValidVolumeID(vol.Source) || vol.PerAlloc && len(vol.Source) > maxVolumeIDLen-8:
		v.Add(f+".Source", "Invalid volume source",
			"The volume source is a volume ID: letters, digits, '.', '_', '-', '[' and ']' (at most %d bytes, 8 fewer with per_alloc, which appends \"[N]\"), got %q.",
			maxVolumeIDLen, vol.Source)
	}
	v.Enum(f+".AccessMode", "access_mode", vol.AccessMode, []string{
		AccessModeSingleNodeReader, AccessModeSingleNodeWriter, AccessModeMultiNodeReader,
		AccessModeMultiNodeSingleWrite, AccessModeMultiNodeMultiWrite})
	v.Enum(f+".AttachmentMode", "attachment_mode", vol.AttachmentMode, []string{AttachmentModeFilesystem, AttachmentModeBlockDevice})
	if vol.MountOptions != nil && vol.AttachmentMode == AttachmentModeBlockDevice {
		v.Add(f+".MountOptions", "Invalid mount_options", "A block-device attachment is not mounted, so it takes no mount_options.")
	}
}

func (v *validation) task(f string, g *TaskGroup, t *Task) {
	v.name(f+".Name", "task name", t.Name)
	switch t.Driver {
	case DriverRawExec, DriverExec, DriverGoPlugin:
	default:
		v.Add(f+".Driver", "Unsupported driver", "The driver must be \"raw_exec\", \"exec\" or \"go_plugin\", got %q.", t.Driver)
	}
	if strings.ContainsFunc(t.User, func(r rune) bool { return r < ' ' || r == 0x7f || r == ' ' || r == ':' }) || len(t.User) > maxUserLen {
		// Names the host's user database can hold; whether the user
		// exists is CheckHost's question.
		v.Add(f+".User", "Invalid user", "user must be a user name (no spaces, ':' or control characters, at most %d bytes), got %q.", maxUserLen, t.User)
	}
	v.nonNegative(f+".KillTimeout", "kill_timeout", t.KillTimeout)
	if _, known := SignalByName(t.KillSignal); !known {
		v.Add(f+".KillSignal", "Invalid kill_signal", "kill_signal must be one of %s, got %q.",
			strings.Join(KillSignalNames(), ", "), t.KillSignal)
	}
	if t.Config == nil {
		v.Add(f+".Config", "Missing config", "Task %q needs a `config { command = \"...\" }` block.", t.Name)
	} else {
		v.config(f+".Config", t.Driver, t.Config)
		v.goPluginConfig(f+".Config", t)
	}
	v.stringMap(f+".Env", "env", t.Env)
	v.stringMap(f+".Meta", "meta", t.Meta)

	if r := t.Resources; r == nil {
		v.Null(f+".Resources", "resources")
	} else {
		v.intRange(f+".Resources.CPU", "cpu", r.CPU, minCPU, maxCPU)
		memOK := v.intRange(f+".Resources.MemoryMB", "memory", r.MemoryMB, minMemoryMB, maxMemoryMB)
		switch {
		case r.MemoryMaxMB == -1:
			// Nomad's MemoryNoLimit: no hard limit at all.
			v.Add(f+".Resources.MemoryMaxMB", "Unsupported memory_max",
				"memory_max = -1 (no memory limit) is not supported: pluginhost always sets a hard limit; give one in MB.")
		case r.MemoryMaxMB == 0:
		case !v.intRange(f+".Resources.MemoryMaxMB", "memory_max", r.MemoryMaxMB, minMemoryMB, maxMemoryMB):
		case memOK && r.MemoryMaxMB < r.MemoryMB:
			// Nomad: "MemoryMaxMB value (%d) should be larger than
			// MemoryMB value (%d)" (nomad/structs/structs.go, Resources.Validate).
			v.Add(f+".Resources.MemoryMaxMB", "Invalid memory_max",
				"memory_max (%d MB) is the hard limit and must be at least memory (%d MB), the reservation.", r.MemoryMaxMB, r.MemoryMB)
		}
	}
	if t.Restart == nil {
		v.Null(f+".Restart", "restart policy")
	} else {
		v.restart(f+".Restart", t.Restart, g.Restart)
	}
	if l := t.Logs; l == nil {
		v.Null(f+".Logs", "logs")
	} else {
		v.intRange(f+".Logs.MaxFiles", "max_files", l.MaxFiles, minLogFiles, maxLogFiles)
		v.intRange(f+".Logs.MaxFileSizeMB", "max_file_size", l.MaxFileSizeMB, minLogFileMB, maxLogFileMB)
	}
	if t.CSIPluginConfig != nil {
		v.csiPlugin(f+".CSIPluginConfig", t.CSIPluginConfig)
	}
	dests := map[string]bool{}
	for k, vm := range t.VolumeMounts {
		vf := fmt.Sprintf("%s.VolumeMounts[%d]", f, k)
		if vm == nil {
			v.Null(vf, "volume_mount")
			continue
		}
		if _, declared := g.Volumes[vm.Volume]; !declared {
			v.Add(vf+".Volume", "Undeclared volume", "Group %q declares no volume %q.", g.Name, vm.Volume)
		}
		clean := path.Clean(vm.Destination)
		switch {
		case vm.Destination == "":
			v.Add(vf+".Destination", "Invalid destination", "The destination must not be empty.")
		case clean == "/":
			v.Add(vf+".Destination", "Invalid destination", "A volume cannot be mounted over the task's root.")
		case clean == "." || clean == ".." || strings.HasPrefix(clean, "../"):
			v.Add(vf+".Destination", "Invalid destination",
				"A relative destination is inside the task directory; %q leaves it or names the directory itself.", vm.Destination)
		case strings.ContainsRune(vm.Destination, 0):
			v.Add(vf+".Destination", "Invalid destination", "The destination must not contain NUL.")
		case dests[clean]:
			// Compared clean: "/srv/d" and "/srv/d/" are one mount point.
			v.Add(vf+".Destination", "Duplicate destination", "Another volume_mount of this task already uses %q.", clean)
		}
		dests[clean] = true
	}
}

func (v *validation) config(f, driver string, c *TaskConfig) {
	if strings.TrimSpace(c.Command) == "" {
		v.Add(f+".Command", "Invalid command", "The command must not be empty.")
	}
	// Nomad's exec and raw_exec both refuse a relative work_dir
	// (drivers/exec/driver.go, drivers/rawexec/driver.go: TaskConfig.validate).
	// A value starting with a runtime variable is absolute once filled in.
	if w := c.WorkDir; w != "" && !path.IsAbs(w) && !strings.HasPrefix(w, "${") {
		v.Add(f+".WorkDir", "Invalid work_dir", "work_dir must be an absolute path, got %q.", w)
	}
	v.execConfig(f, driver, c)
	if c.Checksum == "" {
		return
	}
	// Nomad's raw_exec refuses unknown config keys, so a raw_exec task
	// with checksum would not be a valid Nomad job.
	if driver != DriverGoPlugin {
		v.AddKey(f+".Checksum", "Unsupported argument",
			"checksum is only supported by the go_plugin driver; Nomad's raw_exec has no such key.")
	} else if _, valid := normalizeChecksum(c.Checksum); !valid {
		v.Add(f+".Checksum", "Invalid checksum", "checksum must be \"sha256:\" followed by 64 hex digits, got %q.", c.Checksum)
	}
}

func (v *validation) csiPlugin(f string, p *TaskCSIPluginConfig) {
	if !csiPluginIDPattern.MatchString(p.ID) {
		v.Add(f+".ID", "Invalid plugin id",
			"The plugin id must start with a letter or digit and hold only letters, digits, '.', '_' and '-' (at most 128), got %q.", p.ID)
	}
	switch p.Type {
	case CSIPluginTypeMonolith, CSIPluginTypeNode, CSIPluginTypeController:
	default:
		v.Add(f+".Type", "Invalid plugin type", "The plugin type must be \"monolith\", \"node\" or \"controller\", got %q.", p.Type)
	}
	mountOK := v.absDir(f+".MountDir", "mount_dir", p.MountDir)
	if v.absDir(f+".StagePublishBaseDir", "stage_publish_base_dir", p.StagePublishBaseDir) && mountOK {
		// Nomad refuses it (nomad/structs/structs.go, Task.Validate:
		// "CSIPluginConfig StagePublishBaseDir must not be a subdirectory
		// of MountDir"): the plugin's staging paths would live inside the
		// directory its socket is mounted at.
		if rel := relPath(p.MountDir, p.StagePublishBaseDir); rel == "." || !strings.HasPrefix(rel, "..") {
			v.Add(f+".StagePublishBaseDir", "Invalid stage_publish_base_dir",
				"stage_publish_base_dir %q must not be mount_dir %q or under it (Nomad refuses it too); leave it out for Nomad's default %q.",
				p.StagePublishBaseDir, p.MountDir, DefaultCSIStagePublishBaseDir)
		}
	}
	if v.nonNegative(f+".HealthTimeout", "health_timeout", p.HealthTimeout) && p.HealthTimeout == 0 {
		v.Add(f+".HealthTimeout", "Invalid health_timeout", "health_timeout must be longer than zero.")
	}
}

func (v *validation) absDir(f, key, s string) bool {
	if !path.IsAbs(s) {
		v.Add(f, "Invalid "+key, "%s must be an absolute path, got %q.", key, s)
		return false
	}
	return true
}

// relPath is base's relation to target, both absolute and slash-separated,
// as filepath.Rel would put it: "." for the same directory, "../x" for a
// path outside base.
func relPath(base, target string) string {
	base, target = path.Clean(base), path.Clean(target)
	if base == target {
		return "."
	}
	if base == "/" {
		return strings.TrimPrefix(target, "/")
	}
	if rest, ok := strings.CutPrefix(target, base+"/"); ok {
		return rest
	}
	return "../" + target
}

// pluginUse remembers which task of a group serves a CSI plugin ID.
type pluginUse struct {
	task, typ string
}

// pluginClash refuses two tasks of one allocation registering the same
// plugin ID for the same role: the registry keys plugins by type, ID and
// allocation, so the second would silently replace the first. A node task
// and a controller task may share an ID; a monolith is both.
func (v *validation) pluginClash(f string, seen map[string]*pluginUse, t *Task) {
	p := t.CSIPluginConfig
	prev, ok := seen[p.ID]
	if !ok {
		seen[p.ID] = &pluginUse{task: t.Name, typ: p.Type}
		return
	}
	if prev.typ != CSIPluginTypeMonolith && p.Type != CSIPluginTypeMonolith && prev.typ != p.Type {
		prev.typ = CSIPluginTypeMonolith
		return
	}
	v.Add(f, "Duplicate CSI plugin",
		"Task %q already serves CSI plugin %q as %s in this group; one allocation may serve a plugin ID once per role.",
		prev.task, p.ID, prev.typ)
}
