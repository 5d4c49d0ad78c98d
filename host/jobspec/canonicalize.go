package jobspec

// Canonicalize fills in, in place, the defaults the job file parser applies,
// for a job that did not come from a job file (a JSON submission). A field
// counts as unset when it holds its zero value; see the package
// documentation for which zero values those are and what they become. Nil
// groups and tasks are left for Validate to refuse. A job from Parse is
// already canonical and stays unchanged.
func Canonicalize(job *Job) {
	if job == nil {
		return
	}
	if job.Type == "" {
		job.Type = JobTypeService
	}
	if job.Name == "" {
		job.Name = job.ID
	}
	// Only a missing list means "any": an empty one is refused, as in a
	// job file.
	if job.Datacenters == nil {
		job.Datacenters = []string{"*"}
	}
	if job.Meta == nil {
		job.Meta = map[string]string{}
	}
	for _, g := range job.TaskGroups {
		if g != nil {
			canonicalizeGroup(job.Type, g)
		}
	}
}

func canonicalizeGroup(jobType string, g *TaskGroup) {
	if g.Restart == nil {
		p := defaultRestart(jobType)
		g.Restart = &p
	}
	if g.Meta == nil {
		g.Meta = map[string]string{}
	}
	if g.Volumes == nil {
		g.Volumes = map[string]*VolumeRequest{}
	}
	for alias, v := range g.Volumes {
		if v != nil && v.Name == "" {
			v.Name = alias
		}
	}
	for _, t := range g.Tasks {
		if t != nil {
			canonicalizeTask(g, t)
		}
	}
}

func canonicalizeTask(g *TaskGroup, t *Task) {
	if t.Restart == nil {
		p := *g.Restart
		t.Restart = &p
	}
	if t.KillTimeout == 0 {
		t.KillTimeout = DefaultKillTimeout
	}
	if t.KillSignal == "" {
		t.KillSignal = DefaultKillSignal
	}
	if t.Logs == nil {
		t.Logs = &LogConfig{MaxFiles: DefaultLogMaxFiles, MaxFileSizeMB: DefaultLogMaxFileMB}
	}
	if t.Driver == DriverExec {
		if c := t.Config; c != nil {
			if c.PIDMode == "" {
				c.PIDMode = IsolationModePrivate
			}
			if c.IPCMode == "" {
				c.IPCMode = IsolationModePrivate
			}
		}
	}
	if t.Resources == nil {
		t.Resources = &Resources{CPU: DefaultCPU, MemoryMB: DefaultMemoryMB}
	}
	if t.Env == nil {
		t.Env = map[string]string{}
	}
	if t.Meta == nil {
		t.Meta = map[string]string{}
	}
	if c := t.Config; c != nil && c.Checksum != "" {
		if sum, ok := normalizeChecksum(c.Checksum); ok {
			c.Checksum = sum
		}
	}
	if c := t.Config; c != nil {
		if h := c.Handshake; h != nil && h.ProtocolVersions == nil {
			h.ProtocolVersions = []int{1}
		}
		if p := c.Plugin; p != nil && p.HealthTimeout == 0 {
			p.HealthTimeout = DefaultPluginHealthTimeout
		}
	}
	if p := t.CSIPluginConfig; p != nil {
		if p.MountDir == "" {
			p.MountDir = DefaultCSIMountDir
		}
		if p.StagePublishBaseDir == "" {
			p.StagePublishBaseDir = DefaultCSIStagePublishBaseDir
		}
		if p.HealthTimeout == 0 {
			p.HealthTimeout = DefaultCSIHealthTimeout
		}
	}
}
