package host

import (
	"context"
	"fmt"
	"sort"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/csi/plugins"
	"github.com/pluginhost/pluginhost/csi/volumes"
	"github.com/pluginhost/pluginhost/host/apiconv"
	"github.com/pluginhost/pluginhost/host/apiserver"
)

// The agent's side of volumes: requests are parsed and validated here (one
// validator, volumespec, for files and JSON alike), then handed to the CSI
// volume manager, which records the intent and reconciles it.

// CreateVolume implements apiserver.Backend.
func (a *Agent) CreateVolume(ctx context.Context, req *api.CSIVolumeRegisterRequest) (*api.CSIVolumeRegisterResponse, error) {
	return volumeRequest(a.volumes, a.csi, req, volumes.OriginCreated)
}

// RegisterVolume implements apiserver.Backend.
func (a *Agent) RegisterVolume(ctx context.Context, req *api.CSIVolumeRegisterRequest) (*api.CSIVolumeRegisterResponse, error) {
	return volumeRequest(a.volumes, a.csi, req, volumes.OriginRegistered)
}

func volumeRequest(vm *volumes.VolumeManager, mgr *plugins.Manager, req *api.CSIVolumeRegisterRequest, origin volumes.VolumeOrigin) (*api.CSIVolumeRegisterResponse, error) {
	spec, err := apiconv.VolumeSpec(req, origin == volumes.OriginRegistered)
	if err != nil {
		return nil, err
	}
	if req.PathID != "" && spec.ID != req.PathID {
		return nil, &apiserver.FieldError{Field: "ID", Err: fmt.Errorf("the file describes volume %q, the request is for %q", spec.ID, req.PathID)}
	}
	v := apiconv.CSIVolume(spec)
	var rec *volumes.Volume
	if origin == volumes.OriginCreated {
		rec, err = vm.Create(v)
	} else {
		rec, err = vm.Register(v)
	}
	if err != nil {
		return nil, apiconv.VolumeError(err)
	}
	return &api.CSIVolumeRegisterResponse{Volumes: []*api.CSIVolume{apiVolume(vm, mgr, rec)}}, nil
}

// DeleteVolume implements apiserver.Backend.
func (a *Agent) DeleteVolume(ctx context.Context, id string) (*api.CSIVolume, error) {
	v, err := a.volumes.Delete(id)
	if err != nil {
		return nil, apiconv.VolumeError(err)
	}
	return apiVolume(a.volumes, a.csi, v), nil
}

// DeregisterVolume implements apiserver.Backend. With force, the claims of
// allocations that ended are released first (Nomad's -force); a running
// allocation's claim refuses it either way.
func (a *Agent) DeregisterVolume(ctx context.Context, id string, force bool) (*api.CSIVolume, error) {
	dereg := a.volumes.Deregister
	if force {
		dereg = a.volumes.DeregisterForce
	}
	v, err := dereg(id)
	if err != nil {
		return nil, apiconv.VolumeError(err)
	}
	return apiVolume(a.volumes, a.csi, v), nil
}

// DetachVolume implements apiserver.Backend.
func (a *Agent) DetachVolume(ctx context.Context, id string) (*api.CSIVolume, error) {
	if _, err := a.volumes.Detach(id); err != nil {
		return nil, apiconv.VolumeError(err)
	}
	v, err := a.volumes.WaitReleased(ctx, id)
	if err != nil {
		return nil, apiconv.VolumeError(err)
	}
	return apiVolume(a.volumes, a.csi, v), nil
}

// Volume implements apiserver.Backend.
func (a *Agent) Volume(ctx context.Context, id string) (*api.CSIVolume, error) {
	v, err := a.volumes.Volume(id)
	if err != nil {
		return nil, apiconv.VolumeError(err)
	}
	return apiVolume(a.volumes, a.csi, v), nil
}

// Volumes implements apiserver.Backend.
func (a *Agent) Volumes(ctx context.Context, pluginID string) ([]*api.CSIVolumeListStub, error) {
	vols, err := a.volumes.Volumes()
	if err != nil {
		return nil, err
	}
	out := make([]*api.CSIVolumeListStub, 0, len(vols))
	for _, v := range vols {
		if pluginID != "" && v.PluginID != pluginID {
			continue
		}
		av := apiVolume(a.volumes, a.csi, v)
		stub := &api.CSIVolumeListStub{ID: av.ID, Name: av.Name, ExternalID: av.ExternalID, PluginID: av.PluginID,
			Provider: av.Provider, Capacity: av.Capacity, Schedulable: av.Schedulable, State: av.State,
			StateDescription: av.StateDescription, Attempts: av.Attempts, CreateTime: av.CreateTime, ModifyTime: av.ModifyTime}
		for _, c := range av.RequestedCapabilities {
			stub.AccessModes = append(stub.AccessModes, c.AccessMode)
		}
		out = append(out, stub)
	}
	return out, nil
}

// ExternalVolumes implements apiserver.Backend.
func (a *Agent) ExternalVolumes(ctx context.Context, pluginID string) ([]*api.CSIVolumeExternalStub, error) {
	vols, err := a.volumes.ExternalVolumes(ctx, pluginID)
	if err != nil {
		return nil, apiconv.VolumeError(err)
	}
	out := make([]*api.CSIVolumeExternalStub, len(vols))
	for i, v := range vols {
		out[i] = &api.CSIVolumeExternalStub{ExternalID: v.ExternalID, CapacityBytes: v.Capacity, VolumeID: v.Volume,
			PublishedExternalNodeIDs: v.PublishedNodeIDs}
	}
	return out, nil
}

// CreateSnapshot implements apiserver.Backend.
func (a *Agent) CreateSnapshot(ctx context.Context, volumeID, name string) (*api.CSISnapshot, error) {
	s, err := a.volumes.CreateSnapshot(ctx, volumeID, name)
	if err != nil {
		return nil, apiconv.VolumeError(err)
	}
	return apiconv.Snapshot(s), nil
}

// DeleteSnapshot implements apiserver.Backend.
func (a *Agent) DeleteSnapshot(ctx context.Context, pluginID, snapshotID string) error {
	return apiconv.VolumeError(a.volumes.DeleteSnapshot(ctx, pluginID, snapshotID))
}

// ListSnapshots implements apiserver.Backend.
func (a *Agent) ListSnapshots(ctx context.Context, pluginID string) ([]*api.CSISnapshot, error) {
	snaps, err := a.volumes.ListSnapshots(ctx, pluginID)
	if err != nil {
		return nil, apiconv.VolumeError(err)
	}
	out := make([]*api.CSISnapshot, len(snaps))
	for i, s := range snaps {
		out[i] = apiconv.Snapshot(s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// apiVolume describes a volume with its plugin's health and whether work
// on it is queued.
func apiVolume(volumes *volumes.VolumeManager, mgr *plugins.Manager, v *volumes.Volume) *api.CSIVolume {
	p, ok := mgr.PluginSummary(v.PluginID)
	if !ok {
		p = nil
	}
	return apiconv.Volume(v, volumes.QueueStatus(v.ID).Pending, p)
}

// onVolumeChange publishes a volume's change on the event stream.
func onVolumeChange(publish func(*api.Event), volumes *volumes.VolumeManager, mgr *plugins.Manager, v *volumes.Volume, deleted bool) {
	typ, msg := "VolumeUpdated", v.StateDescription
	if deleted {
		typ, msg = "VolumeDeleted", fmt.Sprintf("volume %s forgotten (%s)", v.ID, v.Desired)
	}
	publish(&api.Event{Topic: api.TopicVolume, Type: typ, Key: v.ID,
		Payload: api.EventPayload{Volume: apiVolume(volumes, mgr, v), Message: msg}})
}
