package jobspec

import "time"

// The types below are what a parsed and validated job file becomes. Every
// field has its default applied by the parser, so consumers (task runner,
// drivers, CSI hook) never re-derive defaults. Field names follow Nomad's api
// package where the concept is the same.

// Job types accepted in `type`, as in Nomad.
const (
	JobTypeService  = "service"
	JobTypeBatch    = "batch"
	JobTypeSystem   = "system"
	JobTypeSysBatch = "sysbatch"
)

// Restart modes.
const (
	RestartModeDelay = "delay"
	RestartModeFail  = "fail"
)

// Drivers pluginhost runs.
const (
	DriverRawExec = "raw_exec"
	// DriverExec runs a task as Nomad's exec driver does: a chroot built
	// from the agent's chroot_env, its own PID and IPC namespaces, a
	// bounded capability set and, by default, a uid of its own (the
	// agent's dynamic ids) or "nobody".
	DriverExec = "exec"
	// DriverGoPlugin launches an sdk plugin through go-plugin. Under Nomad
	// the same binary runs with driver raw_exec in standalone mode.
	DriverGoPlugin = "go_plugin"
)

// CSI plugin types in a csi_plugin block.
const (
	CSIPluginTypeMonolith   = "monolith"
	CSIPluginTypeNode       = "node"
	CSIPluginTypeController = "controller"
)

// Job is one job file.
type Job struct {
	ID          string
	Name        string
	Type        string
	Datacenters []string
	Meta        map[string]string
	TaskGroups  []*TaskGroup

	// SourcePath is the file the job came from ("" for API submissions).
	SourcePath string
}

// Group is the job's group of that name; nil if it has none, or if j is
// nil (an allocation restored without its job).
func (j *Job) Group(name string) *TaskGroup {
	if j == nil {
		return nil
	}
	for _, g := range j.TaskGroups {
		if g.Name == name {
			return g
		}
	}
	return nil
}

// TaskGroup is a `group` block.
type TaskGroup struct {
	Name    string
	Count   int
	Restart *RestartPolicy
	// Update is the group's update block merged over the job's; nil when
	// neither has one (see the default in host/jobs/rollout.go).
	Update  *UpdateStrategy
	Volumes map[string]*VolumeRequest
	Meta    map[string]string
	Tasks   []*Task
}

// RestartPolicy is a `restart` block, merged group → task.
type RestartPolicy struct {
	Attempts int
	Interval time.Duration
	Delay    time.Duration
	Mode     string
}

// VolumeRequest is a group `volume` block (type = "csi").
type VolumeRequest struct {
	Name           string
	Type           string
	Source         string
	ReadOnly       bool
	AccessMode     string
	AttachmentMode string
	MountOptions   *CSIMountOptions
	PerAlloc       bool
}

// CSIMountOptions is a volume's `mount_options` block.
type CSIMountOptions struct {
	FSType     string
	MountFlags []string
}

// Task is a `task` block.
type Task struct {
	Name   string
	Driver string
	// Config is the driver's `config` block.
	Config *TaskConfig
	Env    map[string]string
	Meta   map[string]string

	Restart     *RestartPolicy
	KillTimeout time.Duration
	KillSignal  string
	Logs        *LogConfig
	Resources   *Resources

	CSIPluginConfig *TaskCSIPluginConfig
	VolumeMounts    []*VolumeMount

	// User is the task's `user`: the host user it runs as. "" means, for
	// exec, the agent's choice (a dynamic uid of its own, else "nobody",
	// as Nomad's exec driver); for raw_exec and go_plugin, the agent's own
	// user (Nomad's raw_exec). Whether the user exists and is allowed is
	// the host's business: CheckHost.
	User string
}

// TaskConfig is the `config` block of raw_exec, exec and go_plugin tasks.
type TaskConfig struct {
	Command string
	Args    []string
	WorkDir string
	// Checksum is "sha256:<hex>" of the binary, checked before launch
	// (go_plugin driver only).
	Checksum string

	// Handshake and Plugin describe a go_plugin task that is not an sdk
	// CSI plugin (go_plugin driver only; see goplugin.go). Handshake nil
	// means the sdk's; Plugin nil means the task is an sdk CSI plugin.
	Handshake *GoPluginHandshake
	Plugin    *GoPluginProvides

	// PIDMode and IPCMode are exec's pid_mode and ipc_mode: "private"
	// (the default, filled in for exec tasks) gives the task namespaces of
	// its own, "host" shares the agent's. "" for other drivers, which do
	// not have the keys.
	PIDMode string
	IPCMode string
	// CapAdd and CapDrop are exec's cap_add and cap_drop, as written:
	// capability names in any of Nomad's spellings ("net_raw",
	// "CAP_NET_RAW") or "all". ExecCapabilities computes the task's set.
	CapAdd  []string
	CapDrop []string
}

// LogConfig is a `logs` block.
type LogConfig struct {
	MaxFiles      int
	MaxFileSizeMB int
	Disabled      bool
}

// Resources is a `resources` block, with Nomad's meanings: CPU in MHz
// (a share of the machine's CPU, not a cap), MemoryMB the memory the task
// is sure to get, and MemoryMaxMB the hard limit past which it is killed.
type Resources struct {
	CPU      int
	MemoryMB int
	// MemoryMaxMB is `memory_max`; 0 means not set, and then MemoryMB is
	// the hard limit as well (Nomad's behaviour without it). When set it is
	// at least MemoryMB.
	MemoryMaxMB int
}

// MemoryLimitMB is the hard memory limit: memory_max when set, else memory.
func (r *Resources) MemoryLimitMB() int {
	if r.MemoryMaxMB > 0 {
		return r.MemoryMaxMB
	}
	return r.MemoryMB
}

// TaskCSIPluginConfig is a task's `csi_plugin` block.
type TaskCSIPluginConfig struct {
	ID                  string
	Type                string
	MountDir            string
	StagePublishBaseDir string
	HealthTimeout       time.Duration
}

// VolumeMount is a task's `volume_mount` block.
type VolumeMount struct {
	Volume      string
	Destination string
	ReadOnly    bool
}
