package main

import (
	"context"
	"fmt"

	"github.com/pluginhost/pluginhost/api"
)

// The fake backend has no volumes: the server's volume routes are tested
// for their request handling, the agent's end to end.

func (f *fakeAgent) CreateVolume(ctx context.Context, req *api.CSIVolumeRegisterRequest) (*api.CSIVolumeRegisterResponse, error) {
	return &api.CSIVolumeRegisterResponse{Volumes: []*api.CSIVolume{{ID: req.PathID, State: api.VolumeStatePending}}}, nil
}

func (f *fakeAgent) RegisterVolume(ctx context.Context, req *api.CSIVolumeRegisterRequest) (*api.CSIVolumeRegisterResponse, error) {
	return f.CreateVolume(ctx, req)
}

func (f *fakeAgent) DeleteVolume(ctx context.Context, id string) (*api.CSIVolume, error) {
	return nil, fmt.Errorf("volume %q: %w", id, api.ErrNotFound)
}

func (f *fakeAgent) DeregisterVolume(ctx context.Context, id string, force bool) (*api.CSIVolume, error) {
	return nil, fmt.Errorf("volume %q: %w", id, api.ErrNotFound)
}

func (f *fakeAgent) DetachVolume(ctx context.Context, id string) (*api.CSIVolume, error) {
	return nil, fmt.Errorf("volume %q: %w", id, api.ErrNotFound)
}

func (f *fakeAgent) Volume(ctx context.Context, id string) (*api.CSIVolume, error) {
	return nil, fmt.Errorf("volume %q: %w", id, api.ErrNotFound)
}

func (f *fakeAgent) Volumes(ctx context.Context, pluginID string) ([]*api.CSIVolumeListStub, error) {
	return nil, nil
}

func (f *fakeAgent) ExternalVolumes(ctx context.Context, pluginID string) ([]*api.CSIVolumeExternalStub, error) {
	return nil, nil
}

func (f *fakeAgent) CreateSnapshot(ctx context.Context, volumeID, name string) (*api.CSISnapshot, error) {
	return &api.CSISnapshot{ID: "snap-" + volumeID, SourceVolumeID: volumeID, Name: name}, nil
}

func (f *fakeAgent) DeleteSnapshot(ctx context.Context, pluginID, snapshotID string) error {
	return nil
}

func (f *fakeAgent) ListSnapshots(ctx context.Context, pluginID string) ([]*api.CSISnapshot, error) {
	return nil, nil
}
