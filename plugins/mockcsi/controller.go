package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// defaultVolumeSize is used when CreateVolume sets no capacity range.
const defaultVolumeSize int64 = 1 << 30

type controllerServer struct {
	csi.UnimplementedControllerServer
	d *driver
}

var controllerCaps = []csi.ControllerServiceCapability_RPC_Type{
	csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
	csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME,
	csi.ControllerServiceCapability_RPC_LIST_VOLUMES,
	csi.ControllerServiceCapability_RPC_GET_CAPACITY,
	csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
	csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS,
	csi.ControllerServiceCapability_RPC_GET_SNAPSHOT,
	csi.ControllerServiceCapability_RPC_CLONE_VOLUME,
	csi.ControllerServiceCapability_RPC_PUBLISH_READONLY,
	csi.ControllerServiceCapability_RPC_EXPAND_VOLUME,
	csi.ControllerServiceCapability_RPC_LIST_VOLUMES_PUBLISHED_NODES,
	csi.ControllerServiceCapability_RPC_GET_VOLUME,
	csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
	csi.ControllerServiceCapability_RPC_GET_VOLUME_HEALTH,
	csi.ControllerServiceCapability_RPC_LIST_VOLUME_HEALTH,
	csi.ControllerServiceCapability_RPC_MODIFY_VOLUME,
}

// mutableParams are the parameters ControllerModifyVolume accepts, with a
// check of each value. They change nothing on disk (a directory has no
// tier or IOPS); they exist so that a CO's modify path has a real plugin
// to talk to.
var mutableParams = map[string]func(string) bool{
	"tier": func(v string) bool { return v == "standard" || v == "fast" },
	"iops": func(v string) bool { n, err := strconv.Atoi(v); return err == nil && n > 0 },
}

func checkMutable(params map[string]string) error {
	for k, v := range params {
		ok, known := mutableParams[k]
		if !known {
			return status.Errorf(codes.InvalidArgument, "mutable parameter %q is not supported (supported: tier=standard|fast, iops=<n>)", k)
		}
		if !ok(v) {
			return status.Errorf(codes.InvalidArgument, "mutable parameter %s=%q is invalid", k, v)
		}
	}
	return nil
}

func (s *controllerServer) ControllerGetCapabilities(_ context.Context, _ *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	resp := &csi.ControllerGetCapabilitiesResponse{}
	for _, c := range controllerCaps {
		resp.Capabilities = append(resp.Capabilities, &csi.ControllerServiceCapability{
			Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: c}},
		})
	}
	return resp, nil
}

// checkCapabilities rejects what a directory cannot be: a raw block device,
// or an access mode this spec version does not define.
func checkCapabilities(caps []*csi.VolumeCapability) error {
	if len(caps) == 0 {
		return status.Error(codes.InvalidArgument, "volume capabilities are required")
	}
	for _, c := range caps {
		if err := checkCapability(c); err != nil {
			return err
		}
	}
	return nil
}

func checkCapability(c *csi.VolumeCapability) error {
	if c == nil {
		return status.Error(codes.InvalidArgument, "volume capability is required")
	}
	if c.GetBlock() != nil {
		return status.Error(codes.InvalidArgument, "block access is not supported: mockcsi volumes are directories")
	}
	if c.GetMount() == nil {
		return status.Error(codes.InvalidArgument, "volume capability needs an access type (mount)")
	}
	mode := c.GetAccessMode().GetMode()
	if _, ok := csi.VolumeCapability_AccessMode_Mode_name[int32(mode)]; !ok || mode == csi.VolumeCapability_AccessMode_UNKNOWN {
		return status.Errorf(codes.InvalidArgument, "unsupported access mode %v", mode)
	}
	return nil
}

// sizeFor picks a capacity for a capacity range: the required bytes, or
// the default bounded by the limit.
func sizeFor(r *csi.CapacityRange) (int64, error) {
	req, lim := r.GetRequiredBytes(), r.GetLimitBytes()
	if req < 0 || lim < 0 {
		return 0, status.Error(codes.InvalidArgument, "capacity range must not be negative")
	}
	if lim > 0 && req > lim {
		return 0, status.Errorf(codes.OutOfRange, "required_bytes %d exceeds limit_bytes %d", req, lim)
	}
	switch {
	case req > 0:
		return req, nil
	case lim > 0 && lim < defaultVolumeSize:
		return lim, nil
	default:
		return defaultVolumeSize, nil
	}
}

func fits(size int64, r *csi.CapacityRange) bool {
	return size >= r.GetRequiredBytes() && (r.GetLimitBytes() == 0 || size <= r.GetLimitBytes())
}

// used is the capacity promised to volumes and held by snapshots.
func used(sf *stateFile) int64 {
	var n int64
	for _, v := range sf.Volumes {
		n += v.CapacityBytes
	}
	for _, sn := range sf.Snapshots {
		n += sn.SizeBytes
	}
	return n
}

func newID(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return prefix + hex.EncodeToString(b)
}

func (s *controllerServer) CreateVolume(ctx context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if err := required("name", req.GetName()); err != nil {
		return nil, err
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return nil, err
	}
	if err := checkMutable(req.GetMutableParameters()); err != nil {
		return nil, err
	}
	size, err := sizeFor(req.GetCapacityRange())
	if err != nil {
		return nil, err
	}
	srcSnap := req.GetVolumeContentSource().GetSnapshot().GetSnapshotId()
	srcVol := req.GetVolumeContentSource().GetVolume().GetVolumeId()
	keys := []string{"volume-name/" + req.GetName()}
	if srcVol != "" {
		keys = append(keys, "volume/"+srcVol)
	}
	if srcSnap != "" {
		keys = append(keys, "snapshot/"+srcSnap)
	}
	release, err := s.d.store.acquire(keys...)
	if err != nil {
		return nil, err
	}
	defer release()

	// Idempotency: the name is the key. A matching volume is returned as is.
	var existing *volume
	var srcDir string
	var srcSize int64
	var free int64
	s.d.store.view(func(sf *stateFile) {
		for _, v := range sf.Volumes {
			if v.Name == req.GetName() {
				c := *v
				existing = &c
			}
		}
		free = s.d.capacity - used(sf)
		switch {
		case srcSnap != "":
			if sn, ok := sf.Snapshots[srcSnap]; ok {
				srcDir, srcSize = s.d.store.snapshotDir(sn.ID), sn.SizeBytes
			}
		case srcVol != "":
			if v, ok := sf.Volumes[srcVol]; ok {
				srcDir, srcSize = s.d.store.volumeDir(v.ID), v.CapacityBytes
			}
		}
	})
	if existing != nil {
		if !fits(existing.CapacityBytes, req.GetCapacityRange()) ||
			existing.SourceSnapshotID != srcSnap || existing.SourceVolumeID != srcVol {
			return nil, status.Errorf(codes.AlreadyExists, "volume %q exists (%s) with another capacity or content source", req.GetName(), existing.ID)
		}
		return &csi.CreateVolumeResponse{Volume: s.csiVolume(existing, req.GetVolumeContentSource())}, nil
	}
	if (srcSnap != "" || srcVol != "") && srcDir == "" {
		return nil, status.Errorf(codes.NotFound, "content source %s%s not found", srcSnap, srcVol)
	}
	if srcDir != "" {
		// A copy keeps its source's size unless asked for more; it can
		// never be smaller than what it copies.
		if req.GetCapacityRange().GetRequiredBytes() == 0 {
			size = srcSize
		}
		if size < srcSize || !fits(size, req.GetCapacityRange()) {
			return nil, status.Errorf(codes.OutOfRange, "capacity range %v cannot hold the source's %d bytes", req.GetCapacityRange(), srcSize)
		}
	}
	if size > free {
		return nil, status.Errorf(codes.OutOfRange, "not enough capacity: %d bytes requested, %d free of %d", size, free, s.d.capacity)
	}

	v := &volume{
		ID:                newID("vol-"),
		Name:              req.GetName(),
		CapacityBytes:     size,
		Parameters:        req.GetParameters(),
		MutableParameters: req.GetMutableParameters(),
		SourceSnapshotID:  srcSnap,
		SourceVolumeID:    srcVol,
		CreatedAt:         time.Now().UTC(),
	}
	dir := s.d.store.volumeDir(v.ID)
	err = materialize(dir, func(tmp string) error {
		if srcDir != "" {
			return copyTree(ctx, srcDir, tmp)
		}
		return os.Mkdir(tmp, 0o777)
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return nil, status.Errorf(codes.Internal, "create volume directory: %v", err)
	}
	err = s.d.store.update(func(sf *stateFile) error {
		// The capacity check is repeated under the lock: another name may
		// have been created while the directory was being filled.
		if size > s.d.capacity-used(sf) {
			return status.Errorf(codes.OutOfRange, "not enough capacity for %d bytes", size)
		}
		sf.Volumes[v.ID] = v
		return nil
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s.d.log.Info("volume created", "volume_id", v.ID, "name", v.Name, "capacity", size)
	return &csi.CreateVolumeResponse{Volume: s.csiVolume(v, req.GetVolumeContentSource())}, nil
}

func (s *controllerServer) csiVolume(v *volume, src *csi.VolumeContentSource) *csi.Volume {
	return &csi.Volume{
		VolumeId:      v.ID,
		CapacityBytes: v.CapacityBytes,
		VolumeContext: map[string]string{"name": v.Name},
		ContentSource: src,
	}
}

func (s *controllerServer) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := required("volume_id", id); err != nil {
		return nil, err
	}
	err := s.d.withVolume(id, func(*volume) error {
		err := s.d.commitVolume(id, func(sf *stateFile, v *volume) error {
			if len(v.Published) > 0 || len(v.Staged) > 0 || len(v.Targets) > 0 {
				return status.Errorf(codes.FailedPrecondition, "volume %s is still published or staged", id)
			}
			delete(sf.Volumes, id)
			return nil
		})
		if err != nil {
			return err
		}
		// After the record is gone: a failure here leaves an orphan that
		// the next start removes, never a record without its directory.
		if err := os.RemoveAll(s.d.store.volumeDir(id)); err != nil {
			s.d.log.Warn("volume directory left behind", "volume_id", id, "error", err)
		}
		s.d.log.Info("volume deleted", "volume_id", id)
		return nil
	})
	// A volume that does not exist is deleted already: the spec asks for OK.
	if err != nil && status.Code(err) != codes.NotFound {
		return nil, err
	}
	return &csi.DeleteVolumeResponse{}, nil
}

func (s *controllerServer) ControllerPublishVolume(_ context.Context, req *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	id, node := req.GetVolumeId(), req.GetNodeId()
	if err := required("volume_id", id, "node_id", node); err != nil {
		return nil, err
	}
	if err := checkCapability(req.GetVolumeCapability()); err != nil {
		return nil, err
	}
	mode := int32(req.GetVolumeCapability().GetAccessMode().GetMode())
	err := s.d.editVolume(id, func(sf *stateFile, v *volume) error {
		// mockcsi serves one machine: the only node is its own.
		if node != s.d.nodeID {
			return status.Errorf(codes.NotFound, "node %q not found (this plugin serves node %q)", node, s.d.nodeID)
		}
		if p, ok := v.Published[node]; ok {
			if p.Readonly != req.GetReadonly() || p.AccessMode != mode {
				return status.Errorf(codes.AlreadyExists, "volume %s is published to %s with readonly=%t mode=%d", id, node, p.Readonly, p.AccessMode)
			}
			return nil
		}
		if s.d.maxVolumes > 0 {
			var n int64
			for _, other := range sf.Volumes {
				if _, ok := other.Published[node]; ok {
					n++
				}
			}
			if n >= s.d.maxVolumes {
				return status.Errorf(codes.ResourceExhausted, "node %s already has %d volumes published, its limit", node, n)
			}
		}
		if v.Published == nil {
			v.Published = map[string]*controllerPublication{}
		}
		v.Published[node] = &controllerPublication{Readonly: req.GetReadonly(), AccessMode: mode}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &csi.ControllerPublishVolumeResponse{
		PublishContext: map[string]string{"readonly": fmt.Sprint(req.GetReadonly())},
	}, nil
}

func (s *controllerServer) ControllerUnpublishVolume(_ context.Context, req *csi.ControllerUnpublishVolumeRequest) (*csi.ControllerUnpublishVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := required("volume_id", id); err != nil {
		return nil, err
	}
	err := s.d.editVolume(id, func(_ *stateFile, v *volume) error {
		if req.GetNodeId() == "" {
			v.Published = nil
		} else {
			delete(v.Published, req.GetNodeId())
		}
		return nil
	})
	// A volume or node that is gone is as unpublished as it gets: the spec
	// asks for OK then, so that the CO can finish its cleanup.
	if err != nil && status.Code(err) != codes.NotFound {
		return nil, err
	}
	return &csi.ControllerUnpublishVolumeResponse{}, nil
}

func (s *controllerServer) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if err := required("volume_id", req.GetVolumeId()); err != nil {
		return nil, err
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "volume capabilities are required")
	}
	if _, err := s.d.lookup(req.GetVolumeId()); err != nil {
		return nil, err
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		// Unsupported capabilities are an answer, not an error.
		return &csi.ValidateVolumeCapabilitiesResponse{Message: status.Convert(err).Message()}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{
		Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
			VolumeContext:      req.GetVolumeContext(),
			VolumeCapabilities: req.GetVolumeCapabilities(),
			Parameters:         req.GetParameters(),
		},
	}, nil
}

// Page tokens name the last entry returned rather than an offset, so that a
// volume created or deleted between two pages neither repeats nor hides
// another. They are opaque: base64 of a prefixed ID.
const tokenPrefix = "mockcsi:"

func encodeToken(lastID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(tokenPrefix + lastID))
}

func decodeToken(tok string) (string, error) {
	if tok == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || !strings.HasPrefix(string(b), tokenPrefix) {
		return "", status.Errorf(codes.Aborted, "invalid starting_token %q", tok)
	}
	return strings.TrimPrefix(string(b), tokenPrefix), nil
}

// page returns the IDs after the token's, at most max (0: all), and the
// next token if more remain.
func page(ids []string, token string, maxEntries int32) ([]string, string, error) {
	if maxEntries < 0 {
		return nil, "", status.Error(codes.InvalidArgument, "max_entries must not be negative")
	}
	after, err := decodeToken(token)
	if err != nil {
		return nil, "", err
	}
	slices.Sort(ids)
	start := 0
	if after != "" {
		start, _ = slices.BinarySearch(ids, after)
		if start < len(ids) && ids[start] == after {
			start++
		}
	}
	rest := ids[start:]
	if maxEntries == 0 || int(maxEntries) >= len(rest) {
		return rest, "", nil
	}
	out := rest[:maxEntries]
	return out, encodeToken(out[len(out)-1]), nil
}

func (s *controllerServer) ListVolumes(_ context.Context, req *csi.ListVolumesRequest) (*csi.ListVolumesResponse, error) {
	resp := &csi.ListVolumesResponse{}
	var err error
	s.d.store.view(func(sf *stateFile) {
		var ids []string
		ids, resp.NextToken, err = page(slices.Collect(maps.Keys(sf.Volumes)), req.GetStartingToken(), req.GetMaxEntries())
		for _, id := range ids {
			v := sf.Volumes[id]
			resp.Entries = append(resp.Entries, &csi.ListVolumesResponse_Entry{
				Volume: s.csiVolume(v, contentSource(v)),
				Status: &csi.ListVolumesResponse_VolumeStatus{PublishedNodeIds: slices.Sorted(maps.Keys(v.Published))},
			})
		}
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

func contentSource(v *volume) *csi.VolumeContentSource {
	switch {
	case v.SourceSnapshotID != "":
		return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: v.SourceSnapshotID}}}
	case v.SourceVolumeID != "":
		return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
			Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: v.SourceVolumeID}}}
	}
	return nil
}

func (s *controllerServer) ControllerGetVolume(_ context.Context, req *csi.ControllerGetVolumeRequest) (*csi.ControllerGetVolumeResponse, error) {
	if err := required("volume_id", req.GetVolumeId()); err != nil {
		return nil, err
	}
	v, err := s.d.lookup(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	return &csi.ControllerGetVolumeResponse{
		Volume: s.csiVolume(v, contentSource(v)),
		Status: &csi.ControllerGetVolumeResponse_VolumeStatus{PublishedNodeIds: slices.Sorted(maps.Keys(v.Published))},
	}, nil
}

func (s *controllerServer) GetCapacity(_ context.Context, req *csi.GetCapacityRequest) (*csi.GetCapacityResponse, error) {
	if len(req.GetVolumeCapabilities()) > 0 {
		if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
			// Capacity for volumes mockcsi cannot make is zero.
			return &csi.GetCapacityResponse{}, nil
		}
	}
	var free int64
	s.d.store.view(func(sf *stateFile) { free = max(s.d.capacity-used(sf), 0) })
	return &csi.GetCapacityResponse{AvailableCapacity: free}, nil
}

func (s *controllerServer) ControllerExpandVolume(_ context.Context, req *csi.ControllerExpandVolumeRequest) (*csi.ControllerExpandVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := required("volume_id", id); err != nil {
		return nil, err
	}
	if req.GetCapacityRange() == nil {
		return nil, status.Error(codes.InvalidArgument, "capacity_range is required")
	}
	want, err := sizeFor(req.GetCapacityRange())
	if err != nil {
		return nil, err
	}
	var size int64
	err = s.d.editVolume(id, func(sf *stateFile, v *volume) error {
		// Never shrink: an expand to a smaller size is already satisfied.
		if want <= v.CapacityBytes {
			size = v.CapacityBytes
			return nil
		}
		if free := s.d.capacity - used(sf); want-v.CapacityBytes > free {
			return status.Errorf(codes.OutOfRange, "not enough capacity to grow %s to %d bytes (%d free)", id, want, free)
		}
		v.CapacityBytes, size = want, want
		return nil
	})
	if err != nil {
		return nil, err
	}
	// A directory has no filesystem to grow, so the node has nothing to do.
	return &csi.ControllerExpandVolumeResponse{CapacityBytes: size, NodeExpansionRequired: false}, nil
}

// volumeHealth reports a volume whose directory has vanished as
// inaccessible; an empty status list means healthy.
func (d *driver) volumeHealth(id string) *csi.VolumeHealth {
	h := &csi.VolumeHealth{VolumeId: id}
	if _, err := os.Stat(d.store.volumeDir(id)); err != nil {
		h.HealthStatuses = append(h.HealthStatuses, &csi.VolumeHealth_VolumeHealthEntry{
			Status:  csi.VolumeHealthErrorType_INACCESSIBLE,
			Message: fmt.Sprintf("volume directory: %v", err),
		})
	}
	return h
}

// knownVolumeHealth is the one-volume health answer both services give:
// INVALID_ARGUMENT without an ID, NOT_FOUND for a volume mockcsi never made
// (or deleted), the volume's health otherwise.
func (d *driver) knownVolumeHealth(id string) (*csi.VolumeHealth, error) {
	if err := required("volume_id", id); err != nil {
		return nil, err
	}
	if _, err := d.lookup(id); err != nil {
		return nil, err
	}
	return d.volumeHealth(id), nil
}

func (s *controllerServer) ControllerGetVolumeHealth(_ context.Context, req *csi.ControllerGetVolumeHealthRequest) (*csi.ControllerGetVolumeHealthResponse, error) {
	h, err := s.d.knownVolumeHealth(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	return &csi.ControllerGetVolumeHealthResponse{VolumeHealth: h}, nil
}

// ControllerListVolumeHealth lists only abnormal volumes, as the spec asks.
func (s *controllerServer) ControllerListVolumeHealth(_ context.Context, req *csi.ControllerListVolumeHealthRequest) (*csi.ControllerListVolumeHealthResponse, error) {
	var ids []string
	s.d.store.view(func(sf *stateFile) { ids = slices.Collect(maps.Keys(sf.Volumes)) })
	var bad []string
	for _, id := range ids {
		if len(s.d.volumeHealth(id).HealthStatuses) > 0 {
			bad = append(bad, id)
		}
	}
	out, next, err := page(bad, req.GetStartingToken(), req.GetMaxEntries())
	if err != nil {
		return nil, err
	}
	resp := &csi.ControllerListVolumeHealthResponse{NextToken: next}
	for _, id := range out {
		resp.Entries = append(resp.Entries, s.d.volumeHealth(id))
	}
	return resp, nil
}

func (s *controllerServer) ControllerModifyVolume(_ context.Context, req *csi.ControllerModifyVolumeRequest) (*csi.ControllerModifyVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := required("volume_id", id); err != nil {
		return nil, err
	}
	if err := checkMutable(req.GetMutableParameters()); err != nil {
		return nil, err
	}
	err := s.d.editVolume(id, func(_ *stateFile, v *volume) error {
		if v.MutableParameters == nil {
			v.MutableParameters = map[string]string{}
		}
		maps.Copy(v.MutableParameters, req.GetMutableParameters())
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &csi.ControllerModifyVolumeResponse{}, nil
}
