package api

import (
	"encoding/json"
	"time"
)

// The wire types of the HTTP API. Field names follow Nomad's api package
// where the concept is the same, so that people (and scripts) that know
// Nomad's JSON read ours without a dictionary. Times that Nomad sends as unix
// nanoseconds (CreateTime, ModifyTime, SubmitTime, TaskEvent.Time) are int64
// unix nanoseconds here too; the others are RFC 3339 time.Time values.
//
// They are a deliberate copy of the agent's own types (state.TaskState,
// state.Alloc, volumes.Volume, ...), as Nomad's api module is of its structs:
// clients decode these, so they change only compatibly, while the agent's
// types change with its code. Package apiconv converts between the two.

// Job statuses, as in Nomad.
const (
	JobStatusPending = "pending"
	JobStatusRunning = "running"
	JobStatusDead    = "dead"
)

// Allocation client statuses, as in Nomad.
const (
	AllocClientStatusPending  = "pending"
	AllocClientStatusRunning  = "running"
	AllocClientStatusComplete = "complete"
	AllocClientStatusFailed   = "failed"
	AllocClientStatusLost     = "lost"
)

// Allocation desired statuses, as in Nomad.
const (
	AllocDesiredStatusRun  = "run"
	AllocDesiredStatusStop = "stop"
)

// Task states, as in Nomad.
const (
	TaskStatePending = "pending"
	TaskStateRunning = "running"
	TaskStateDead    = "dead"
)

// JobListStub is one row of GET /v1/jobs.
type JobListStub struct {
	ID                string
	Name              string
	Type              string
	Status            string
	StatusDescription string
	Stop              bool
	// Version is the job's current version: 0 for the first submission,
	// one more for every accepted change (as in Nomad).
	Version    uint64
	SubmitTime int64
	ModifyTime int64
	JobSummary *JobSummary
}

// JobUpdate is the outcome of a version's roll-out, as a Nomad deployment's
// status: "successful" or "failed", with the reason.
type JobUpdate struct {
	Version     uint64
	Status      string
	Description string
	Time        int64
}

// JobSummary counts a job's allocations per task group and client status.
type JobSummary struct {
	JobID   string
	Summary map[string]TaskGroupSummary
}

// TaskGroupSummary counts one group's allocations by client status.
type TaskGroupSummary struct {
	Queued   int
	Complete int
	Failed   int
	Running  int
	Starting int
	Lost     int
}

// Job is GET /v1/job/<id>.
type Job struct {
	ID                string
	Name              string
	Type              string
	Status            string
	StatusDescription string
	Stop              bool
	Datacenters       []string
	Meta              map[string]string
	TaskGroups        []*TaskGroup
	// SourcePath is the job file the job came from ("" if it was submitted
	// as a parsed job).
	SourcePath string
	// Version is the job's current version (see JobListStub.Version).
	Version uint64
	// Stable: this version rolled out successfully (in history views).
	Stable bool `json:",omitempty"`
	// Update is how the roll-out of the newest finished version ended.
	Update     *JobUpdate `json:",omitempty"`
	SubmitTime int64
	ModifyTime int64
	JobSummary *JobSummary
	// Spec is the version's whole job as the agent parsed it (JSON), in
	// GET /v1/job/<id>/versions only: what the UI diffs between two
	// versions, as `nomad job history -p` does.
	Spec json.RawMessage `json:",omitempty"`
}

// TaskGroup is the part of a group's spec that status views show.
type TaskGroup struct {
	Name  string
	Count int
	Tasks []*Task
}

// Task is the part of a task's spec that status views show.
type Task struct {
	Name   string
	Driver string
	// CSIPluginID is the csi_plugin block's id, "" for ordinary tasks.
	CSIPluginID   string
	CSIPluginType string
}

// JobRegisterResponse answers POST /v1/jobs.
type JobRegisterResponse struct {
	JobID string
	// Version is the job's version after the submission (the current one
	// when the submission changed nothing).
	Version uint64
	// AllocIDs are the allocations the registration created, in group
	// order; an unchanged re-submission creates none.
	AllocIDs []string
	// Warnings are things the agent accepted but wants the user to know.
	Warnings []string
}

// AllocListStub is one allocation in lists and in events.
type AllocListStub struct {
	ID      string
	Name    string
	JobID   string
	JobType string
	// JobVersion is the version of the job the allocation runs.
	JobVersion         uint64
	TaskGroup          string
	ClientStatus       string
	ClientDescription  string
	DesiredStatus      string
	DesiredDescription string
	TaskStates         map[string]*TaskState
	CreateTime         int64
	ModifyTime         int64
}

// Allocation is GET /v1/allocation/<id>: the list form plus what only the
// detail view needs. The stub is embedded, so the JSON is flat as in Nomad.
type Allocation struct {
	AllocListStub
	// Tasks lists the group's tasks in spec order, so that views do not
	// depend on map order and a task with no state yet is still shown.
	Tasks []string
	// AllocDir is the allocation's directory on this machine.
	AllocDir string
	// TaskResources are each task's `resources`, by task name.
	TaskResources map[string]*Resources `json:",omitempty"`
	// Volumes are the group's CSI volumes and this allocation's claim on
	// each (Nomad shows them in alloc status too).
	Volumes []*AllocVolume `json:",omitempty"`
}

// AllocVolume is one of an allocation's volumes.
type AllocVolume struct {
	// Name is the group's volume alias; VolumeID the volume claimed (with
	// per_alloc, the source with the allocation's index).
	Name     string
	VolumeID string
	PluginID string `json:",omitempty"`
	ReadOnly bool
	// Claim is the allocation's claim; nil when there is none (not yet
	// made, or released and forgotten).
	Claim *CSIVolumeClaim `json:",omitempty"`
}

// Stub returns the list form of a.
func (a *Allocation) Stub() *AllocListStub {
	if a == nil {
		return nil
	}
	stub := a.AllocListStub
	return &stub
}

// TaskState is one task's state within an allocation: the wire copy of
// state.TaskState, with the task's events.
type TaskState struct {
	State       string
	Failed      bool
	Restarts    uint64
	LastRestart time.Time
	StartedAt   time.Time
	FinishedAt  time.Time
	Events      []*TaskEvent
}

// Task event types the agent emits (a subset of Nomad's, same spelling).
const (
	TaskReceived        = "Received"
	TaskSetup           = "Task Setup"
	TaskStarted         = "Started"
	TaskTerminated      = "Terminated"
	TaskRestarting      = "Restarting"
	TaskNotRestarting   = "Not Restarting"
	TaskKilling         = "Killing"
	TaskKilled          = "Killed"
	TaskSignaling       = "Signaling"
	TaskRestartSignal   = "Restart Signaled"
	TaskDriverFailure   = "Driver Failure"
	TaskSetupFailure    = "Setup Failure"
	TaskPluginHealthy   = "Plugin became healthy"
	TaskPluginUnhealthy = "Plugin became unhealthy"
	// TaskPluginNotHealthy: the plugin failed before it was ever healthy
	// in this launch.
	TaskPluginNotHealthy = "Plugin not healthy"
)

// TaskEvent is one entry of a task's history.
type TaskEvent struct {
	Type string
	// Time is unix nanoseconds, as in Nomad.
	Time           int64
	DisplayMessage string
	ExitCode       int
	Signal         int
	Details        map[string]string
}

// CSIPluginListStub is one row of GET /v1/plugins?type=csi.
type CSIPluginListStub struct {
	ID                  string
	Provider            string
	ControllerRequired  bool
	ControllersHealthy  int
	ControllersExpected int
	NodesHealthy        int
	NodesExpected       int
}

// CSIPlugin is GET /v1/plugin/csi/<id>.
type CSIPlugin struct {
	ID                 string
	Provider           string
	Version            string
	ControllerRequired bool
	// Controllers and Nodes hold the fingerprints, keyed by allocation ID.
	// Several allocations of one plugin may be registered at once (rolling
	// update, restore); only the active one is used and fingerprinted, so
	// these maps hold the active allocations and Allocations lists all.
	Controllers         map[string]*CSIInfo
	Nodes               map[string]*CSIInfo
	ControllersHealthy  int
	ControllersExpected int
	NodesHealthy        int
	NodesExpected       int
	// ActiveController and ActiveNode are the allocation IDs the agent
	// talks to for each plugin type ("" if none is registered).
	ActiveController string
	ActiveNode       string
	Allocations      []*AllocListStub
}

// CSIInfo is what fingerprinting learnt about one allocation of a plugin.
type CSIInfo struct {
	PluginID                 string
	AllocID                  string
	Healthy                  bool
	HealthDescription        string
	UpdateTime               time.Time
	RequiresControllerPlugin bool
	// RequiresTopologies is whether the driver advertises
	// VOLUME_ACCESSIBILITY_CONSTRAINTS (its volumes may be reachable from
	// some topology segments only), computed as Nomad does it.
	RequiresTopologies bool
	// Capabilities are the plugin's GetPluginCapabilities, by CSI enum name.
	Capabilities   []string
	ControllerInfo *CSIControllerInfo `json:",omitempty"`
	NodeInfo       *CSINodeInfo       `json:",omitempty"`
}

// CSIControllerInfo is the controller side of a fingerprint.
type CSIControllerInfo struct {
	// Capabilities are ControllerGetCapabilities, by CSI enum name.
	Capabilities []string
}

// CSINodeInfo is the node side of a fingerprint.
type CSINodeInfo struct {
	ID                 string
	MaxVolumes         int64
	AccessibleTopology map[string]string
	// Capabilities are NodeGetCapabilities, by CSI enum name.
	Capabilities []string
}

// Event topics.
const (
	TopicAllocation = "Allocation"
	TopicTask       = "Task"
	TopicJob        = "Job"
	TopicPlugin     = "Plugin"
	TopicRegistry   = "Registry"
	TopicAgent      = "Agent"
)

// Event is one entry of GET /v1/event/stream.
type Event struct {
	// Topic groups events (TopicAllocation, TopicTask...); Type says what
	// happened within it ("AllocationUpdated", "TaskEvent",
	// "PluginHealthChanged", "PluginRegistered"...).
	Topic string
	Type  string
	// Key is the ID the event is about: an allocation, job or plugin ID.
	Key string
	// Index increases by one per event, so that a reader can tell whether
	// it missed some.
	Index uint64
	// Time is unix nanoseconds.
	Time    int64
	Payload EventPayload
}

// EventPayload holds whatever the event carries; unused fields are omitted.
type EventPayload struct {
	JobID      string         `json:",omitempty"`
	AllocID    string         `json:",omitempty"`
	TaskName   string         `json:",omitempty"`
	Allocation *AllocListStub `json:",omitempty"`
	TaskEvent  *TaskEvent     `json:",omitempty"`
	// PluginType is a dynamic registry type ("csi-controller",
	// "csi-node") for registry and plugin events.
	PluginType string   `json:",omitempty"`
	Plugin     *CSIInfo `json:",omitempty"`
	// PluginName and Instance are set on EventPluginActive events: the
	// plugin's active instance after a change, nil when it has none.
	PluginName string          `json:",omitempty"`
	Instance   *PluginInstance `json:",omitempty"`
	Volume     *CSIVolume      `json:",omitempty"`
	Message    string          `json:",omitempty"`
}

// AgentSelf is GET /v1/agent/self.
type AgentSelf struct {
	Version  string
	NodeName string
	DataDir  string
	// Addr is where this API listens.
	Addr string
	// Ready is true once every plugin restored from state has been
	// fingerprinted, so that jobs that use them will not fail with
	// "plugin not found" (Nomad #7200).
	Ready     bool
	StartTime time.Time
	// Containment says how tasks are contained on this machine.
	Containment *Containment
	// EventIndex is the index of the latest event (0: none yet): a
	// reader that wants the last N events asks for the stream from
	// EventIndex-N (`pluginhost events` does).
	EventIndex uint64
}

// Containment is how the agent contains tasks: the cgroup version it uses
// (0: none, and then Reason says why and resources are not enforced).
type Containment struct {
	CgroupVersion int
	CgroupParent  string   `json:",omitempty"`
	Controllers   []string `json:",omitempty"`
	Reason        string   `json:",omitempty"`
}

// AgentHealth is the body of GET /v1/agent/health.
type AgentHealth struct {
	Ready   bool
	Message string
}
