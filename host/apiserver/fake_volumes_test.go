package apiserver

import (
	"context"
	"fmt"

	"github.com/pluginhost/pluginhost/api"
)

// The fake backend has no volumes: the server's volume routes are tested
// for their request handling, the agent's end to end.

func (f *fakeBackend) CreateVolume(ctx context.Context, req *api.CSIVolumeRegisterRequest) (*api.CSIVolumeRegisterResponse, error) {
	f.calls.Add(1)
	return &api.CSIVolumeRegisterResponse{Volumes: []*api.CSIVolume{{ID: req.PathID, State: api.VolumeStatePending}}}, nil
}

func (f *fakeBackend) RegisterVolume(ctx context.Context, req *api.CSIVolumeRegisterRequest) (*api.CSIVolumeRegisterResponse, error) {
	f.calls.Add(1)
	return f.CreateVolume(ctx, req)
}

func (f *fakeBackend) DeleteVolume(ctx context.Context, id string) (*api.CSIVolume, error) {
	f.calls.Add(1)
	return nil, fmt.Errorf("volume %q: %w", id, api.ErrNotFound)
}

func (f *fakeBackend) DeregisterVolume(ctx context.Context, id string, force bool) (*api.CSIVolume, error) {
	f.calls.Add(1)
	return nil, fmt.Errorf("volume %q: %w", id, api.ErrNotFound)
}

func (f *fakeBackend) DetachVolume(ctx context.Context, id string) (*api.CSIVolume, error) {
	f.calls.Add(1)
	return nil, fmt.Errorf("volume %q: %w", id, api.ErrNotFound)
}

func (f *fakeBackend) Volume(ctx context.Context, id string) (*api.CSIVolume, error) {
	f.calls.Add(1)
	return nil, fmt.Errorf("volume %q: %w", id, api.ErrNotFound)
}

func (f *fakeBackend) Volumes(ctx context.Context, pluginID string) ([]*api.CSIVolumeListStub, error) {
	f.calls.Add(1)
	return nil, nil
}

func (f *fakeBackend) ExternalVolumes(ctx context.Context, pluginID string) ([]*api.CSIVolumeExternalStub, error) {
	f.calls.Add(1)
	return nil, nil
}

func (f *fakeBackend) CreateSnapshot(ctx context.Context, volumeID, name string) (*api.CSISnapshot, error) {
	f.calls.Add(1)
	return &api.CSISnapshot{ID: "snap-" + volumeID, SourceVolumeID: volumeID, Name: name}, nil
}

func (f *fakeBackend) DeleteSnapshot(ctx context.Context, pluginID, snapshotID string) error {
	f.calls.Add(1)
	return nil
}

func (f *fakeBackend) ListSnapshots(ctx context.Context, pluginID string) ([]*api.CSISnapshot, error) {
	f.calls.Add(1)
	return nil, nil
}
