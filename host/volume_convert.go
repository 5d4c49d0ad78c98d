package host

import (
	"maps"
	"slices"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/csi/volumes"
	"github.com/pluginhost/pluginhost/host/volumespec"
)

// redacted replaces secret values in answers, as Nomad does: the keys tell
// which secrets a volume has, the values never leave the agent.
const redacted = "[REDACTED]"

// specFromAPI reads a JSON request's volume as a volume file would be, so
// that it goes through the same validator.
func specFromAPI(in *api.CSIVolume) *volumespec.Volume {
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
			out.RequestedTopologies.Required = append(out.RequestedTopologies.Required, specTopology(x))
		}
		for _, x := range t.Preferred {
			out.RequestedTopologies.Preferred = append(out.RequestedTopologies.Preferred, specTopology(x))
		}
	}
	return out
}

func specTopology(t *api.CSITopology) *volumespec.Topology {
	if t == nil {
		return nil
	}
	return &volumespec.Topology{Segments: maps.Clone(t.Segments)}
}

// csiVolume is a validated spec as the volume manager's record.
func csiVolume(s *volumespec.Volume) *volumes.Volume {
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

// apiVolume describes a volume with its plugin's health.
func (a *Agent) apiVolume(v *volumes.Volume) *api.CSIVolume {
	out := &api.CSIVolume{
		ID: v.ID, Name: v.Name, ExternalID: v.ExternalID, PluginID: v.PluginID,
		SnapshotID: v.SnapshotID, CloneID: v.CloneID,
		RequestedCapacityMin: v.RequestedCapacityMin, RequestedCapacityMax: v.RequestedCapacityMax,
		Parameters: maps.Clone(v.Parameters), Context: maps.Clone(v.Context), Capacity: v.Capacity,
		Origin: string(v.Origin), Desired: string(v.Desired), State: string(v.State),
		StateDescription: v.StateDescription, Attempts: v.Attempts, LastError: v.LastError,
		Queued:     a.volumes.QueueStatus(v.ID).Pending,
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
		out.RequestedTopologies = &api.CSITopologyRequest{Required: apiTopologies(t.Required), Preferred: apiTopologies(t.Preferred)}
	}
	out.Topologies = apiTopologies(v.AccessibleTopology)
	out.ControllerPublish = string(v.ControllerPublish)
	for _, c := range v.Claims {
		out.Claims = append(out.Claims, apiClaim(c))
		if c.Desired == volumes.ClaimReleased {
			continue
		}
		if c.Mode == volumes.ClaimWrite {
			out.CurrentWriters++
		} else {
			out.CurrentReaders++
		}
	}
	if p, ok := a.csi.PluginSummary(v.PluginID); ok {
		out.Provider = p.Provider
		out.ControllerRequired = p.ControllerRequired
		out.ControllersHealthy, out.ControllersExpected = p.ControllersHealthy, p.ControllersExpected
		out.NodesHealthy, out.NodesExpected = p.NodesHealthy, p.NodesExpected
		out.Schedulable = v.State == volumes.StateReady && v.Desired == volumes.DesiredPresent && p.NodesHealthy > 0 &&
			(!p.ControllerRequired || p.ControllersHealthy > 0)
	}
	return out
}

func apiClaim(c *volumes.Claim) *api.CSIVolumeClaim {
	return &api.CSIVolumeClaim{
		AllocID: c.AllocID, JobID: c.JobID, TaskGroup: c.TaskGroup, Mode: string(c.Mode),
		AccessMode: c.AccessMode, AttachmentMode: c.AttachmentMode,
		Desired: string(c.Desired), State: string(c.State), StateDescription: c.StateDescription,
		Failed: c.Failed, Attempts: c.Attempts, LastError: c.LastError,
		StagingPath: c.StagingPath, TargetPath: c.TargetPath,
		CreateTime: c.CreateTime.UnixNano(), ModifyTime: c.ModifyTime.UnixNano(),
	}
}

func apiTopologies(ts []*volumes.Topology) []*api.CSITopology {
	if len(ts) == 0 {
		return nil
	}
	out := make([]*api.CSITopology, len(ts))
	for i, t := range ts {
		out[i] = &api.CSITopology{Segments: maps.Clone(t.Segments)}
	}
	return out
}

func apiSnapshot(s *volumes.Snapshot) *api.CSISnapshot {
	out := &api.CSISnapshot{ID: s.ID, ExternalSourceVolumeID: s.SourceVolumeID, SourceVolumeID: s.SourceVolume,
		PluginID: s.PluginID, Name: s.Name, SizeBytes: s.Size, IsReady: s.ReadyToUse}
	if !s.CreateTime.IsZero() {
		out.CreateTime = s.CreateTime.UnixNano()
	}
	return out
}
