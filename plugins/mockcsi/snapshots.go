package main

import (
	"context"
	"os"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// A snapshot is a full copy of the volume's directory, taken while the
// source volume is locked against other operations. It is independent of
// its source: deleting the volume keeps the snapshot.

func csiSnapshot(sn *snapshot) *csi.Snapshot {
	return &csi.Snapshot{
		SnapshotId:     sn.ID,
		SourceVolumeId: sn.SourceVolumeID,
		SizeBytes:      sn.SizeBytes,
		CreationTime:   timestamppb.New(sn.CreatedAt),
		ReadyToUse:     true,
	}
}

func (s *controllerServer) CreateSnapshot(ctx context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	name, src := req.GetName(), req.GetSourceVolumeId()
	if err := required("name", name, "source_volume_id", src); err != nil {
		return nil, err
	}
	release, err := s.d.store.acquire("snapshot-name/"+name, "volume/"+src)
	if err != nil {
		return nil, err
	}
	defer release()

	var existing *snapshot
	var vol *volume
	var free int64
	s.d.store.view(func(sf *stateFile) {
		for _, sn := range sf.Snapshots {
			if sn.Name == name {
				c := *sn
				existing = &c
			}
		}
		if v, ok := sf.Volumes[src]; ok {
			c := *v
			vol = &c
		}
		free = s.d.capacity - used(sf)
	})
	if existing != nil {
		if existing.SourceVolumeID != src {
			return nil, status.Errorf(codes.AlreadyExists, "snapshot %q exists (%s) of another volume", name, existing.ID)
		}
		return &csi.CreateSnapshotResponse{Snapshot: csiSnapshot(existing)}, nil
	}
	if vol == nil {
		return nil, status.Errorf(codes.NotFound, "source volume %s not found", src)
	}
	if vol.CapacityBytes > free {
		return nil, status.Errorf(codes.ResourceExhausted, "not enough capacity for a %d-byte snapshot (%d free)", vol.CapacityBytes, free)
	}
	sn := &snapshot{
		ID:             newID("snap-"),
		Name:           name,
		SourceVolumeID: src,
		SizeBytes:      vol.CapacityBytes,
		CreatedAt:      time.Now().UTC(),
	}
	dir := s.d.store.snapshotDir(sn.ID)
	if err := materialize(dir, func(tmp string) error { return copyTree(ctx, s.d.store.volumeDir(src), tmp) }); err != nil {
		if ctx.Err() != nil {
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return nil, status.Errorf(codes.Internal, "copy volume %s: %v", src, err)
	}
	err = s.d.store.update(func(sf *stateFile) error {
		sf.Snapshots[sn.ID] = sn
		return nil
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s.d.log.Info("snapshot created", "snapshot_id", sn.ID, "volume_id", src)
	return &csi.CreateSnapshotResponse{Snapshot: csiSnapshot(sn)}, nil
}

func (s *controllerServer) DeleteSnapshot(_ context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	id := req.GetSnapshotId()
	if err := required("snapshot_id", id); err != nil {
		return nil, err
	}
	release, err := s.d.store.acquire("snapshot/" + id)
	if err != nil {
		return nil, err
	}
	defer release()
	found := false
	err = s.d.store.update(func(sf *stateFile) error {
		_, found = sf.Snapshots[id]
		delete(sf.Snapshots, id)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if found {
		if err := os.RemoveAll(s.d.store.snapshotDir(id)); err != nil {
			s.d.log.Warn("snapshot directory left behind", "snapshot_id", id, "error", err)
		}
	}
	return &csi.DeleteSnapshotResponse{}, nil
}

func (s *controllerServer) ListSnapshots(_ context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	resp := &csi.ListSnapshotsResponse{}
	var err error
	s.d.store.view(func(sf *stateFile) {
		var ids []string
		for id, sn := range sf.Snapshots {
			if req.GetSnapshotId() != "" && id != req.GetSnapshotId() {
				continue
			}
			if req.GetSourceVolumeId() != "" && sn.SourceVolumeID != req.GetSourceVolumeId() {
				continue
			}
			ids = append(ids, id)
		}
		ids, resp.NextToken, err = page(ids, req.GetStartingToken(), req.GetMaxEntries())
		for _, id := range ids {
			resp.Entries = append(resp.Entries, &csi.ListSnapshotsResponse_Entry{Snapshot: csiSnapshot(sf.Snapshots[id])})
		}
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

func (s *controllerServer) GetSnapshot(_ context.Context, req *csi.GetSnapshotRequest) (*csi.GetSnapshotResponse, error) {
	if err := required("snapshot_id", req.GetSnapshotId()); err != nil {
		return nil, err
	}
	var resp *csi.GetSnapshotResponse
	s.d.store.view(func(sf *stateFile) {
		if sn, ok := sf.Snapshots[req.GetSnapshotId()]; ok {
			resp = &csi.GetSnapshotResponse{Snapshot: csiSnapshot(sn)}
		}
	})
	if resp == nil {
		return nil, status.Errorf(codes.NotFound, "snapshot %s not found", req.GetSnapshotId())
	}
	return resp, nil
}
