package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The node service attaches a volume's directory in two steps, as the CO
// drives them: stage binds it on the staging path, publish binds the staging
// path on each target path. Every step is recorded in the state file before
// it returns, so that after a restart an unpublish or unstage still knows
// what to undo, and a repeated publish finds its record and checks that the
// mount is really there (re-mounting it after a reboot) instead of failing.

type nodeServer struct {
	csi.UnimplementedNodeServer
	d *driver
}

var nodeCaps = []csi.NodeServiceCapability_RPC_Type{
	csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME,
	csi.NodeServiceCapability_RPC_GET_VOLUME_STATS,
	csi.NodeServiceCapability_RPC_EXPAND_VOLUME,
	csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
	csi.NodeServiceCapability_RPC_GET_VOLUME_HEALTH,
	csi.NodeServiceCapability_RPC_GET_STORAGE_HEALTH,
}

func (s *nodeServer) NodeGetCapabilities(_ context.Context, _ *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	resp := &csi.NodeGetCapabilitiesResponse{}
	for _, c := range nodeCaps {
		resp.Capabilities = append(resp.Capabilities, &csi.NodeServiceCapability{
			Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: c}},
		})
	}
	return resp, nil
}

func (s *nodeServer) NodeGetInfo(_ context.Context, _ *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: s.d.nodeID, MaxVolumesPerNode: s.d.maxVolumes}, nil
}

func (s *nodeServer) NodeStageVolume(_ context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	id, staging := req.GetVolumeId(), filepath.Clean(req.GetStagingTargetPath())
	if err := required("volume_id", id, "staging_target_path", req.GetStagingTargetPath()); err != nil {
		return nil, err
	}
	if err := checkCapability(req.GetVolumeCapability()); err != nil {
		return nil, err
	}
	mode := int32(req.GetVolumeCapability().GetAccessMode().GetMode())
	err := s.d.withVolume(id, func(v *volume) error {
		for path, rec := range v.Staged {
			if path != staging {
				return status.Errorf(codes.FailedPrecondition, "volume %s is already staged at %s", id, path)
			}
			if rec.AccessMode != mode {
				return status.Errorf(codes.AlreadyExists, "volume %s is staged at %s with access mode %d", id, path, rec.AccessMode)
			}
		}
		if err := os.MkdirAll(staging, 0o750); err != nil {
			return status.Errorf(codes.Internal, "staging path: %v", err)
		}
		// Bind even when a record exists: bind is a no-op on a live mount
		// and restores one lost to a reboot.
		method, err := s.d.mounter.bind(s.d.store.volumeDir(id), staging, false)
		if err != nil {
			return status.Errorf(codes.Internal, "stage %s: %v", id, err)
		}
		err = s.d.commitVolume(id, func(_ *stateFile, v *volume) error {
			if v.Staged == nil {
				v.Staged = map[string]*stageRecord{}
			}
			v.Staged[staging] = &stageRecord{Method: method, AccessMode: mode}
			return nil
		})
		if err != nil && method == mountBind {
			_ = unmountAll(staging)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &csi.NodeStageVolumeResponse{}, nil
}

func (s *nodeServer) NodeUnstageVolume(_ context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	id, staging := req.GetVolumeId(), filepath.Clean(req.GetStagingTargetPath())
	if err := required("volume_id", id, "staging_target_path", req.GetStagingTargetPath()); err != nil {
		return nil, err
	}
	err := s.d.withVolume(id, func(v *volume) error {
		for target, rec := range v.Targets {
			if rec.StagingPath == staging {
				return status.Errorf(codes.FailedPrecondition, "volume %s is still published at %s", id, target)
			}
		}
		// Unmount whatever the record says, and also when there is no
		// record: a crash between mounting and recording leaves an
		// unrecorded mount.
		if rec := v.Staged[staging]; rec == nil || rec.Method == mountBind {
			if err := unmountAll(staging); err != nil {
				return status.Errorf(codes.Internal, "unstage %s: %v", id, err)
			}
		}
		return s.d.commitVolume(id, func(_ *stateFile, v *volume) error {
			delete(v.Staged, staging)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return &csi.NodeUnstageVolumeResponse{}, nil
}

func isReadOnlyMode(m csi.VolumeCapability_AccessMode_Mode) bool {
	return m == csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY ||
		m == csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
}

func (s *nodeServer) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id, target, staging := req.GetVolumeId(), filepath.Clean(req.GetTargetPath()), filepath.Clean(req.GetStagingTargetPath())
	if err := required("volume_id", id, "target_path", req.GetTargetPath()); err != nil {
		return nil, err
	}
	if err := checkCapability(req.GetVolumeCapability()); err != nil {
		return nil, err
	}
	if req.GetStagingTargetPath() == "" {
		return nil, status.Error(codes.InvalidArgument, "staging_target_path is required: mockcsi stages volumes")
	}
	mode := req.GetVolumeCapability().GetAccessMode().GetMode()
	readonly := req.GetReadonly() || isReadOnlyMode(mode)
	err := s.d.withVolume(id, func(v *volume) error {
		stage, ok := v.Staged[staging]
		if !ok {
			return status.Errorf(codes.FailedPrecondition, "volume %s is not staged at %s", id, staging)
		}
		if rec, ok := v.Targets[target]; ok && (rec.Readonly != readonly || rec.AccessMode != int32(mode) || rec.StagingPath != staging) {
			return status.Errorf(codes.AlreadyExists, "volume %s is published at %s with other options", id, target)
		}
		for other, rec := range v.Targets {
			single := mode == csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER ||
				rec.AccessMode == int32(csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER)
			if other != target && single {
				return status.Errorf(codes.FailedPrecondition, "volume %s is single-writer and already published at %s", id, other)
			}
		}
		method, err := s.publish(id, stage, staging, target, readonly)
		if err != nil {
			return status.Errorf(codes.Internal, "publish %s at %s: %v", id, target, err)
		}
		err = s.d.commitVolume(id, func(_ *stateFile, v *volume) error {
			if v.Targets == nil {
				v.Targets = map[string]*targetRecord{}
			}
			v.Targets[target] = &targetRecord{Method: method, Readonly: readonly, AccessMode: int32(mode), StagingPath: staging}
			return nil
		})
		if err != nil {
			_ = removeTarget(target)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// publish makes target show the volume: a bind of the staging mount, or a
// symlink to the volume directory when mounting is not possible. The CO
// creates target's parent; the SP creates (and later removes) target.
func (s *nodeServer) publish(id string, stage *stageRecord, staging, target string, readonly bool) (string, error) {
	src := staging
	if stage.Method != mountBind {
		src = s.d.store.volumeDir(id)
	} else if mounted, err := isMountpoint(staging); err != nil {
		return "", err
	} else if !mounted {
		// The staging mount is gone (a reboot) though its record is not:
		// binding the bare directory would show the workload an empty
		// volume, so restore the staging mount first.
		if _, err := s.d.mounter.bind(s.d.store.volumeDir(id), staging, false); err != nil {
			return "", fmt.Errorf("restore staging mount: %w", err)
		}
	}
	if fi, err := os.Lstat(target); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		// Published before by the fallback: check it still points right.
		if dest, err := os.Readlink(target); err == nil && dest == s.d.store.volumeDir(id) {
			return mountSymlink, nil
		}
		return "", fmt.Errorf("%s is a symlink that mockcsi did not make", target)
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return "", err
	}
	method, err := s.d.mounter.bind(src, target, readonly)
	if err != nil || method == mountBind {
		return method, err
	}
	// Symlink fallback: replace the empty directory with a link. A
	// non-empty directory is the workload's data, so Remove refuses it.
	if err := os.Remove(target); err != nil {
		return "", err
	}
	return mountSymlink, os.Symlink(s.d.store.volumeDir(id), target)
}

// removeTarget undoes publish whatever method made it: unmount, then
// remove the empty directory or the symlink.
func removeTarget(target string) error {
	if err := unmountAll(target); err != nil {
		return err
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (s *nodeServer) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	id, target := req.GetVolumeId(), filepath.Clean(req.GetTargetPath())
	if err := required("volume_id", id, "target_path", req.GetTargetPath()); err != nil {
		return nil, err
	}
	err := s.d.withVolume(id, func(v *volume) error {
		if _, ok := v.Targets[target]; !ok {
			// Not published there (any more): nothing of ours to remove.
			// The path, if it exists, belongs to someone else.
			return nil
		}
		if err := removeTarget(target); err != nil {
			return status.Errorf(codes.Internal, "unpublish %s from %s: %v", id, target, err)
		}
		return s.d.commitVolume(id, func(_ *stateFile, v *volume) error {
			delete(v.Targets, target)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// attachedAt reports whether path is one of the volume's staging or target
// paths: the volume_path of stats and expand must be one of them.
func attachedAt(v *volume, path string) bool {
	path = filepath.Clean(path)
	_, staged := v.Staged[path]
	_, published := v.Targets[path]
	return staged || published
}

func (s *nodeServer) NodeGetVolumeStats(_ context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	if err := required("volume_id", req.GetVolumeId(), "volume_path", req.GetVolumePath()); err != nil {
		return nil, err
	}
	v, err := s.d.attachedVolume(req.GetVolumeId(), req.GetVolumePath())
	if err != nil {
		return nil, err
	}
	dir := s.d.store.volumeDir(v.ID)
	bytes, inodes, err := dirUsage(dir)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s directory: %v (see NodeGetVolumeHealth)", v.ID, err)
	}
	usage := []*csi.VolumeUsage{{
		Unit:      csi.VolumeUsage_BYTES,
		Total:     v.CapacityBytes,
		Used:      bytes,
		Available: max(v.CapacityBytes-bytes, 0),
	}}
	// Inodes are shared with the filesystem holding the state dir.
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err == nil {
		usage = append(usage, &csi.VolumeUsage{
			Unit:      csi.VolumeUsage_INODES,
			Total:     int64(st.Files),
			Used:      inodes,
			Available: int64(st.Ffree),
		})
	}
	return &csi.NodeGetVolumeStatsResponse{Usage: usage}, nil
}

// NodeExpandVolume has nothing to grow (a directory has no filesystem of its
// own); it checks the request and reports the volume's capacity.
func (s *nodeServer) NodeExpandVolume(_ context.Context, req *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	if err := required("volume_id", req.GetVolumeId(), "volume_path", req.GetVolumePath()); err != nil {
		return nil, err
	}
	v, err := s.d.attachedVolume(req.GetVolumeId(), req.GetVolumePath())
	if err != nil {
		return nil, err
	}
	if want := req.GetCapacityRange().GetRequiredBytes(); want > v.CapacityBytes {
		return nil, status.Errorf(codes.OutOfRange, "volume %s has %d bytes; expand it on the controller to %d first", v.ID, v.CapacityBytes, want)
	}
	return &csi.NodeExpandVolumeResponse{CapacityBytes: v.CapacityBytes}, nil
}

func (s *nodeServer) NodeGetVolumeHealth(_ context.Context, req *csi.NodeGetVolumeHealthRequest) (*csi.NodeGetVolumeHealthResponse, error) {
	h, err := s.d.knownVolumeHealth(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	return &csi.NodeGetVolumeHealthResponse{VolumeHealth: h}, nil
}

// NodeGetStorageHealth reports the state dir's filesystem: it is the only
// storage backend mockcsi has.
func (s *nodeServer) NodeGetStorageHealth(_ context.Context, _ *csi.NodeGetStorageHealthRequest) (*csi.NodeGetStorageHealthResponse, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(s.d.store.dir, &st); err != nil {
		return &csi.NodeGetStorageHealthResponse{BackendHealth: []*csi.NodeGetStorageHealthResponse_StorageBackendHealth{{
			Status:  csi.StorageHealthErrorType_STORAGE_UNREACHABLE,
			Message: fmt.Sprintf("state dir %s: %v", s.d.store.dir, err),
		}}}, nil
	}
	return &csi.NodeGetStorageHealthResponse{}, nil
}
