package apiconv

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/csi"
	"github.com/pluginhost/pluginhost/csi/plugins"
	"github.com/pluginhost/pluginhost/csi/volumes"
	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/apiserver"
	"github.com/pluginhost/pluginhost/host/claimhook"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/host/supervisor"
	"github.com/pluginhost/pluginhost/host/taskrunner"
	"github.com/pluginhost/pluginhost/host/volumespec"
)

// Allocation converts an allocation runner's snapshot into the API's
// Allocation; allocDir is where its files are.
func Allocation(snap *taskrunner.AllocSnapshot, allocDir string) *api.Allocation {
	al := snap.Alloc
	out := &api.Allocation{
		AllocListStub: api.AllocListStub{
			ID:            al.ID,
			JobID:         al.JobID,
			JobVersion:    al.JobVersion,
			TaskGroup:     al.TaskGroup,
			ClientStatus:  al.ClientStatus,
			DesiredStatus: al.DesiredStatus,
			TaskStates:    make(map[string]*api.TaskState, len(snap.Tasks)),
			CreateTime:    al.CreateTime.UnixNano(),
			ModifyTime:    al.ModifyTime.UnixNano(),
		},
		AllocDir: allocDir,
	}
	if al.Job != nil {
		out.Name = fmt.Sprintf("%s.%s[%d]", al.Job.ID, al.TaskGroup, al.Index)
		out.JobType = al.Job.Type
		out.TaskResources = taskResources(al.Job, al.TaskGroup)
	}
	for _, t := range snap.Tasks {
		out.Tasks = append(out.Tasks, t.Name)
		ts := &api.TaskState{
			State:       t.State.State,
			Failed:      t.State.Failed,
			Restarts:    t.State.Restarts,
			LastRestart: t.State.LastRestart,
			StartedAt:   t.State.StartedAt,
			FinishedAt:  t.State.FinishedAt,
		}
		for _, ev := range t.Events {
			ts.Events = append(ts.Events, TaskEvent(ev))
		}
		out.TaskStates[t.Name] = ts
	}
	if al.DesiredStatus == state.AllocDesiredStatusStop {
		out.DesiredDescription = "alloc stopped"
	}
	return out
}

// AllocationEvent announces an allocation's current state on the event
// stream.
func AllocationEvent(snap *taskrunner.AllocSnapshot, allocDir string) *api.Event {
	stub := Allocation(snap, allocDir).Stub()
	return &api.Event{
		Topic: api.TopicAllocation, Type: "AllocationUpdated", Key: stub.ID,
		Payload: api.EventPayload{JobID: stub.JobID, AllocID: stub.ID, Allocation: stub},
	}
}

// TaskEvent is a task event on the wire.
func TaskEvent(ev *state.TaskEvent) *api.TaskEvent {
	if ev == nil {
		return nil
	}
	return &api.TaskEvent{
		Type:           ev.Type,
		Time:           ev.Time.UnixNano(),
		DisplayMessage: ev.Message,
		ExitCode:       ev.ExitCode,
		Signal:         ev.Signal,
		Details:        maps.Clone(ev.Details),
	}
}

// Job is the API's view of a job spec.
func Job(j *jobspec.Job) *api.Job {
	out := &api.Job{ID: j.ID, Name: j.Name, Type: j.Type, Datacenters: j.Datacenters,
		Meta: maps.Clone(j.Meta), SourcePath: j.SourcePath}
	for _, g := range j.TaskGroups {
		tg := &api.TaskGroup{Name: g.Name, Count: g.Count}
		for _, t := range g.Tasks {
			at := &api.Task{Name: t.Name, Driver: t.Driver}
			if t.CSIPluginConfig != nil {
				at.CSIPluginID, at.CSIPluginType = t.CSIPluginConfig.ID, t.CSIPluginConfig.Type
			}
			tg.Tasks = append(tg.Tasks, at)
		}
		out.TaskGroups = append(out.TaskGroups, tg)
	}
	return out
}

// JobStatus describes a job from its record and its allocations. The
// summary counts every allocation the job has, whatever version it runs:
// during an update, or when something went wrong, it shows what really
// runs, not what should.
func JobStatus(js *state.JobState, snaps []*taskrunner.AllocSnapshot) *api.Job {
	out := Job(js.Spec.Job)
	out.Version, out.Stop = js.Job.Version, js.Job.Stop
	out.Stable = js.Spec.Stable
	if u := js.Job.Update; u != nil {
		out.Update = &api.JobUpdate{Version: u.Version, Status: u.Status, Description: u.Description, Time: u.Time.UnixNano()}
		if js.Job.Failed(js.Job.Version) && !js.Job.Stop {
			out.StatusDescription = fmt.Sprintf("update to version %d failed: %s", u.Version, u.Description)
		}
	}
	out.SubmitTime, out.ModifyTime = js.Job.SubmitTime.UnixNano(), js.Job.ModifyTime.UnixNano()

	summary := &api.JobSummary{JobID: out.ID, Summary: map[string]api.TaskGroupSummary{}}
	for _, g := range js.Spec.Job.TaskGroups {
		summary.Summary[g.Name] = api.TaskGroupSummary{}
	}
	wanted, running, pending := 0, 0, 0
	for _, s := range snaps {
		al := s.Alloc
		if al.ModifyTime.UnixNano() > out.ModifyTime {
			out.ModifyTime = al.ModifyTime.UnixNano()
		}
		g := summary.Summary[al.TaskGroup]
		switch al.ClientStatus {
		case state.AllocClientStatusRunning:
			g.Running++
		case state.AllocClientStatusComplete:
			g.Complete++
		case state.AllocClientStatusFailed:
			g.Failed++
		default:
			g.Starting++
		}
		summary.Summary[al.TaskGroup] = g
		if al.DesiredStatus == state.AllocDesiredStatusRun {
			wanted++
			switch al.ClientStatus {
			case state.AllocClientStatusRunning:
				running++
			case state.AllocClientStatusPending:
				pending++
			}
		}
	}
	out.JobSummary = summary
	switch {
	case js.Job.Stop:
		out.Status, out.StatusDescription = api.JobStatusDead, "stopped"
	case running > 0:
		out.Status = api.JobStatusRunning
	case pending > 0 || wanted == 0 && len(snaps) == 0:
		out.Status = api.JobStatusPending
	default:
		out.Status = api.JobStatusDead
		out.StatusDescription = "all allocations finished"
	}
	if !js.Job.Stop && js.Spec.Job.Type == jobspec.JobTypeBatch && wanted > 0 && running == 0 && pending == 0 {
		out.StatusDescription = "batch complete"
	}
	return out
}

// redacted replaces secret values in answers, as Nomad does: the keys tell
// which secrets a volume has, the values never leave the agent.
const redacted = "[REDACTED]"

// SpecFromAPI reads a JSON request's volume as a volume file would be, so
// that it goes through the same validator.
func SpecFromAPI(in *api.CSIVolume) *volumespec.Volume {
	out := &volumespec.Volume{
		ID: in.ID, Name: in.Name, Type: "csi", PluginID: in.PluginID, ExternalID: in.ExternalID,
		SnapshotID: in.SnapshotID, CloneID: in.CloneID,
		RequestedCapacityMin: in.RequestedCapacityMin, RequestedCapacityMax: in.RequestedCapacityMax,
		Secrets: maps.Clone(in.Secrets), Parameters: maps.Clone(in.Parameters), Context: maps.Clone(in.Context),
	}
	for _, c := range in.RequestedCapabilities {
		if c == nil {
			out.RequestedCapabilities = append(out.RequestedCapabilities, nil)
			continue
		}
		out.RequestedCapabilities = append(out.RequestedCapabilities,
			&volumespec.Capability{AccessMode: c.AccessMode, AttachmentMode: c.AttachmentMode})
	}
	if in.MountOptions != nil {
		out.MountOptions = &volumespec.MountOptions{FSType: in.MountOptions.FSType, MountFlags: slices.Clone(in.MountOptions.MountFlags)}
	}
	if t := in.RequestedTopologies; t != nil {
		out.RequestedTopologies = &volumespec.TopologyRequest{}
		for _, x := range t.Required {
			out.RequestedTopologies.Required = append(out.RequestedTopologies.Required, topology(x))
		}
		for _, x := range t.Preferred {
			out.RequestedTopologies.Preferred = append(out.RequestedTopologies.Preferred, topology(x))
		}
	}
	return out
}

func topology(t *api.CSITopology) *volumespec.Topology {
	if t == nil {
		return nil
	}
	return &volumespec.Topology{Segments: maps.Clone(t.Segments)}
}

// CSIVolume is a validated spec as the volume manager's record.
func CSIVolume(s *volumespec.Volume) *volumes.Volume {
	v := &volumes.Volume{
		ID: s.ID, Name: s.Name, PluginID: s.PluginID, ExternalID: s.ExternalID,
		SnapshotID: s.SnapshotID, CloneID: s.CloneID,
		RequestedCapacityMin: s.RequestedCapacityMin, RequestedCapacityMax: s.RequestedCapacityMax,
		Secrets: maps.Clone(s.Secrets), Parameters: maps.Clone(s.Parameters), Context: maps.Clone(s.Context),
	}
	for _, c := range s.RequestedCapabilities {
		v.RequestedCapabilities = append(v.RequestedCapabilities, &volumes.VolumeCapability{AccessMode: c.AccessMode, AttachmentMode: c.AttachmentMode})
	}
	if s.MountOptions != nil {
		v.MountOptions = &volumes.MountOptions{FSType: s.MountOptions.FSType, MountFlags: slices.Clone(s.MountOptions.MountFlags)}
	}
	if t := s.RequestedTopologies; t != nil {
		v.RequestedTopologies = &volumes.TopologyRequest{}
		for _, x := range t.Required {
			v.RequestedTopologies.Required = append(v.RequestedTopologies.Required, &volumes.Topology{Segments: maps.Clone(x.Segments)})
		}
		for _, x := range t.Preferred {
			v.RequestedTopologies.Preferred = append(v.RequestedTopologies.Preferred, &volumes.Topology{Segments: maps.Clone(x.Segments)})
		}
	}
	return v
}

// Volume describes a volume with its plugin's health (p, nil when the
// plugin is unknown); queued says whether work on it is pending.
func Volume(v *volumes.Volume, queued bool, p *plugins.PluginStatus) *api.CSIVolume {
	out := &api.CSIVolume{
		ID: v.ID, Name: v.Name, ExternalID: v.ExternalID, PluginID: v.PluginID,
		SnapshotID: v.SnapshotID, CloneID: v.CloneID,
		RequestedCapacityMin: v.RequestedCapacityMin, RequestedCapacityMax: v.RequestedCapacityMax,
		Parameters: maps.Clone(v.Parameters), Context: maps.Clone(v.Context), Capacity: v.Capacity,
		Origin: string(v.Origin), Desired: string(v.Desired), State: string(v.State),
		StateDescription: v.StateDescription, Attempts: v.Attempts, LastError: v.LastError,
		Queued:     queued,
		CreateTime: v.CreateTime.UnixNano(), ModifyTime: v.ModifyTime.UnixNano(),
	}
	if len(v.Secrets) > 0 {
		out.Secrets = make(map[string]string, len(v.Secrets))
		for k := range v.Secrets {
			out.Secrets[k] = redacted
		}
	}
	for _, c := range v.RequestedCapabilities {
		out.RequestedCapabilities = append(out.RequestedCapabilities, &api.CSIVolumeCapability{AccessMode: c.AccessMode, AttachmentMode: c.AttachmentMode})
	}
	if v.MountOptions != nil {
		out.MountOptions = &api.CSIMountOptions{FSType: v.MountOptions.FSType, MountFlags: slices.Clone(v.MountOptions.MountFlags)}
	}
	if t := v.RequestedTopologies; t != nil {
		out.RequestedTopologies = &api.CSITopologyRequest{Required: topologies(t.Required), Preferred: topologies(t.Preferred)}
	}
	out.Topologies = topologies(v.AccessibleTopology)
	out.ControllerPublish = string(v.ControllerPublish)
	for _, c := range v.Claims {
		out.Claims = append(out.Claims, Claim(c))
		if c.Desired == volumes.ClaimReleased {
			continue
		}
		if c.Mode == volumes.ClaimWrite {
			out.CurrentWriters++
		} else {
			out.CurrentReaders++
		}
	}
	if p != nil {
		out.Provider = p.Provider
		out.ControllerRequired = p.ControllerRequired
		out.ControllersHealthy, out.ControllersExpected = p.ControllersHealthy, p.ControllersExpected
		out.NodesHealthy, out.NodesExpected = p.NodesHealthy, p.NodesExpected
		out.Schedulable = v.State == volumes.StateReady && v.Desired == volumes.DesiredPresent && p.NodesHealthy > 0 &&
			(!p.ControllerRequired || p.ControllersHealthy > 0)
	}
	return out
}

// Claim is a volume claim on the wire.
func Claim(c *volumes.Claim) *api.CSIVolumeClaim {
	return &api.CSIVolumeClaim{
		AllocID: c.AllocID, JobID: c.JobID, TaskGroup: c.TaskGroup, Mode: string(c.Mode),
		AccessMode: c.AccessMode, AttachmentMode: c.AttachmentMode,
		Desired: string(c.Desired), State: string(c.State), StateDescription: c.StateDescription,
		Failed: c.Failed, Attempts: c.Attempts, LastError: c.LastError,
		StagingPath: c.StagingPath, TargetPath: c.TargetPath,
		CreateTime: c.CreateTime.UnixNano(), ModifyTime: c.ModifyTime.UnixNano(),
	}
}

func topologies(ts []*volumes.Topology) []*api.CSITopology {
	if len(ts) == 0 {
		return nil
	}
	out := make([]*api.CSITopology, len(ts))
	for i, t := range ts {
		out[i] = &api.CSITopology{Segments: maps.Clone(t.Segments)}
	}
	return out
}

// Snapshot is a volume snapshot on the wire.
func Snapshot(s *volumes.Snapshot) *api.CSISnapshot {
	out := &api.CSISnapshot{ID: s.ID, ExternalSourceVolumeID: s.SourceVolumeID, SourceVolumeID: s.SourceVolume,
		PluginID: s.PluginID, Name: s.Name, SizeBytes: s.Size, IsReady: s.ReadyToUse}
	if !s.CreateTime.IsZero() {
		out.CreateTime = s.CreateTime.UnixNano()
	}
	return out
}

// CSIInfo renders one allocation's fingerprint.
//
// RequiresTopologies follows Nomad's fingerprinter (buildBasicFingerprint):
// it is whether the driver advertises the plugin capability
// VOLUME_ACCESSIBILITY_CONSTRAINTS, taken from GetPluginCapabilities for
// controllers and nodes alike. It is not whether NodeGetInfo reported a
// topology: that left controllers always false and a driver that does
// constrain accessibility, but reports no segments for this node, false
// too. Each allocation answers from its own fingerprint, as in Nomad, so
// both halves of one driver agree, and an allocation whose capabilities
// are not known yet says false like its empty Capabilities.
func CSIInfo(fp *plugins.Fingerprint, controllerRequired bool) *api.CSIInfo {
	info := &api.CSIInfo{
		PluginID: fp.PluginID, AllocID: fp.AllocID, Healthy: fp.Healthy,
		HealthDescription: fp.HealthDescription, UpdateTime: fp.LastFingerprint,
		RequiresControllerPlugin: controllerRequired, Capabilities: fp.PluginCapabilities,
		RequiresTopologies: fp.HasPluginCapability(csi.CapVolumeAccessibility),
	}
	if fp.Type == dynamic.PluginTypeCSIController {
		info.ControllerInfo = &api.CSIControllerInfo{Capabilities: fp.ControllerCapabilities}
	} else {
		ni := &api.CSINodeInfo{Capabilities: fp.NodeCapabilities}
		if fp.NodeInfo != nil {
			ni.ID, ni.MaxVolumes, ni.AccessibleTopology = fp.NodeInfo.NodeID, fp.NodeInfo.MaxVolumes, fp.NodeInfo.Topology
		}
		info.NodeInfo = ni
	}
	return info
}

// PluginInstance is a registered plugin instance on the wire.
func PluginInstance(p *dynamic.PluginInfo, active bool) *api.PluginInstance {
	inst := &api.PluginInstance{Type: p.Type, Name: p.Name, AllocID: p.AllocID, Version: p.Version,
		Active: active, RegisteredAt: p.RegisteredAt}
	if p.ConnectionInfo != nil {
		inst.SocketPath = p.ConnectionInfo.SocketPath
	}
	return inst
}

// WhyNotHealthy says, from a plugin task's latest events, why its plugin
// is not registered: starting (waiting for the answer to check), its last
// probe error, or a restart pending (with the attempt the restart policy
// is at).
//
// prefix goes before a failed check's message: "probe: " for a CSI
// plugin's Probe; "" for a generic plugin's, whose message already says
// what it asked.
func WhyNotHealthy(snap *taskrunner.AllocSnapshot, task, check, prefix string) string {
	for _, t := range snap.Tasks {
		if t.Name != task {
			continue
		}
		if t.State.State == state.TaskStateDead {
			return "task is dead"
		}
		for i := len(t.Events) - 1; i >= 0; i-- {
			ev := t.Events[i]
			switch ev.Type {
			case supervisor.EventPluginNotHealthy, supervisor.EventPluginUnhealthy:
				return prefix + oneLine(ev.Message)
			case taskrunner.EventRestarting:
				return fmt.Sprintf("restart pending (%d restarts so far): %s", t.State.Restarts, oneLine(ev.Message))
			case taskrunner.EventStarted, taskrunner.EventReattached:
				return "starting: waiting for the plugin to answer " + check
			}
		}
		return "task " + t.State.State
	}
	return "task not found"
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }

// VolumeSpec parses a request's file, or decodes its JSON volume, and
// validates it for a create or (register) a registration: one validator
// for both.
func VolumeSpec(req *api.CSIVolumeRegisterRequest, register bool) (*volumespec.Volume, error) {
	op := volumespec.OpCreate
	if register {
		op = volumespec.OpRegister
	}
	if req.Source != "" {
		name := req.Filename
		if name == "" {
			name = "volume.hcl"
		}
		spec, err := volumespec.ParseFor([]byte(req.Source), name, op)
		if err != nil {
			return nil, &apiserver.FieldError{Field: "Source", Err: err}
		}
		return spec, nil
	}
	spec := SpecFromAPI(req.Volumes[0])
	volumespec.Canonicalize(spec)
	if err := volumespec.ValidateFor(spec, op); err != nil {
		return nil, &apiserver.FieldError{Field: "Volumes[0]", Err: err}
	}
	return spec, nil
}

// VolumeError turns the volume manager's refusals into API errors.
func VolumeError(err error) error {
	var re *volumes.RequestError
	var ce *volumes.ClaimError
	switch {
	case errors.As(err, &re):
		return &apiserver.FieldError{Field: re.Field, Err: re.Err}
	case errors.As(err, &ce):
		return &apiserver.FieldError{Field: ce.Field, Err: ce}
	case errors.Is(err, volumes.ErrVolumeNotFound):
		// The caller names the volume; the store's path means nothing
		// to a user.
		return api.ErrNotFound
	}
	return err
}

// AllocVolumes lists an allocation's volumes with its claim on each;
// volume reads a volume's record.
func AllocVolumes(snap *taskrunner.AllocSnapshot, volume func(id string) (*volumes.Volume, error)) []*api.AllocVolume {
	al := snap.Alloc
	g := al.Job.Group(al.TaskGroup)
	if g == nil || len(g.Volumes) == 0 {
		return nil
	}
	aliases := claimhook.VolumeAliases(g)
	var out []*api.AllocVolume
	for i, r := range claimhook.ClaimRequests(al.Job, g, al.ID, al.Index) {
		av := &api.AllocVolume{Name: aliases[i], VolumeID: r.VolumeID, ReadOnly: r.ReadOnly}
		if v, err := volume(r.VolumeID); err == nil {
			av.PluginID = v.PluginID
			for _, c := range v.Claims {
				if c.AllocID == al.ID {
					av.Claim = Claim(c)
				}
			}
		}
		out = append(out, av)
	}
	return out
}

// taskResources are the group's tasks' resources, for alloc status.
func taskResources(job *jobspec.Job, group string) map[string]*api.Resources {
	g := job.Group(group)
	if g == nil {
		return nil
	}
	out := make(map[string]*api.Resources, len(g.Tasks))
	for _, t := range g.Tasks {
		if r := t.Resources; r != nil {
			out[t.Name] = &api.Resources{CPU: r.CPU, MemoryMB: r.MemoryMB, MemoryMaxMB: r.MemoryMaxMB}
		}
	}
	return out
}
