package host

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/csi/volumes"
	apiserver "github.com/pluginhost/pluginhost/host/api"
	"github.com/pluginhost/pluginhost/host/volumespec"
)

// The agent's side of volumes: requests are parsed and validated here (one
// validator, volumespec, for files and JSON alike), then handed to the CSI
// volume manager, which records the intent and reconciles it.

// CreateVolume implements apiserver.Backend.
func (a *Agent) CreateVolume(ctx context.Context, req *api.CSIVolumeRegisterRequest) (*api.CSIVolumeRegisterResponse, error) {
	return a.volumeRequest(req, volumes.OriginCreated)
}

// RegisterVolume implements apiserver.Backend.
func (a *Agent) RegisterVolume(ctx context.Context, req *api.CSIVolumeRegisterRequest) (*api.CSIVolumeRegisterResponse, error) {
	return a.volumeRequest(req, volumes.OriginRegistered)
}

func (a *Agent) volumeRequest(req *api.CSIVolumeRegisterRequest, origin volumes.VolumeOrigin) (*api.CSIVolumeRegisterResponse, error) {
	spec, err := volumeSpec(req, origin)
	if err != nil {
		return nil, err
	}
	if req.PathID != "" && spec.ID != req.PathID {
		return nil, &apiserver.FieldError{Field: "ID", Err: fmt.Errorf("the file describes volume %q, the request is for %q", spec.ID, req.PathID)}
	}
	v := csiVolume(spec)
	var rec *volumes.Volume
	if origin == volumes.OriginCreated {
		rec, err = a.volumes.Create(v)
	} else {
		rec, err = a.volumes.Register(v)
	}
	if err != nil {
		return nil, volumeError(err)
	}
	return &api.CSIVolumeRegisterResponse{Volumes: []*api.CSIVolume{a.apiVolume(rec)}}, nil
}

// volumeSpec parses a request's file, or decodes its JSON volume, and
// validates it for the operation: one validator for both.
func volumeSpec(req *api.CSIVolumeRegisterRequest, origin volumes.VolumeOrigin) (*volumespec.Volume, error) {
	op := volumespec.OpCreate
	if origin == volumes.OriginRegistered {
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
	spec := specFromAPI(req.Volumes[0])
	volumespec.Canonicalize(spec)
	if err := volumespec.ValidateFor(spec, op); err != nil {
		return nil, &apiserver.FieldError{Field: "Volumes[0]", Err: err}
	}
	return spec, nil
}

// volumeError turns the volume manager's refusals into API errors.
func volumeError(err error) error {
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

// DeleteVolume implements apiserver.Backend.
func (a *Agent) DeleteVolume(ctx context.Context, id string) (*api.CSIVolume, error) {
	v, err := a.volumes.Delete(id)
	if err != nil {
		return nil, volumeError(err)
	}
	return a.apiVolume(v), nil
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
		return nil, volumeError(err)
	}
	return a.apiVolume(v), nil
}

// DetachVolume implements apiserver.Backend.
func (a *Agent) DetachVolume(ctx context.Context, id string) (*api.CSIVolume, error) {
	if _, err := a.volumes.Detach(id); err != nil {
		return nil, volumeError(err)
	}
	v, err := a.volumes.WaitReleased(ctx, id)
	if err != nil {
		return nil, volumeError(err)
	}
	return a.apiVolume(v), nil
}

// Volume implements apiserver.Backend.
func (a *Agent) Volume(ctx context.Context, id string) (*api.CSIVolume, error) {
	v, err := a.volumes.Volume(id)
	if err != nil {
		return nil, volumeError(err)
	}
	return a.apiVolume(v), nil
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
		av := a.apiVolume(v)
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
		return nil, volumeError(err)
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
		return nil, volumeError(err)
	}
	return apiSnapshot(s), nil
}

// DeleteSnapshot implements apiserver.Backend.
func (a *Agent) DeleteSnapshot(ctx context.Context, pluginID, snapshotID string) error {
	return volumeError(a.volumes.DeleteSnapshot(ctx, pluginID, snapshotID))
}

// ListSnapshots implements apiserver.Backend.
func (a *Agent) ListSnapshots(ctx context.Context, pluginID string) ([]*api.CSISnapshot, error) {
	snaps, err := a.volumes.ListSnapshots(ctx, pluginID)
	if err != nil {
		return nil, volumeError(err)
	}
	out := make([]*api.CSISnapshot, len(snaps))
	for i, s := range snaps {
		out[i] = apiSnapshot(s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// onVolumeChange publishes a volume's change on the event stream.
func (a *Agent) onVolumeChange(v *volumes.Volume, deleted bool) {
	typ, msg := "VolumeUpdated", v.StateDescription
	if deleted {
		typ, msg = "VolumeDeleted", fmt.Sprintf("volume %s forgotten (%s)", v.ID, v.Desired)
	}
	a.events.publish(&api.Event{Topic: api.TopicVolume, Type: typ, Key: v.ID,
		Payload: api.EventPayload{Volume: a.apiVolume(v), Message: msg}})
}
