package csi

import (
	"context"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
)

// The RPC wrappers below are deliberately uniform: spec request in, spec
// response out, each through invoke. Every CSI RPC that mutates state is
// idempotent by the spec, which is what makes retrying all of them safe.

// Identity service.

// GetPluginInfo calls Identity.GetPluginInfo.
func (c *Client) GetPluginInfo(ctx context.Context, req *csipb.GetPluginInfoRequest) (*csipb.GetPluginInfoResponse, error) {
	return invoke(ctx, c, "GetPluginInfo", func(ctx context.Context) (*csipb.GetPluginInfoResponse, error) {
		return c.identity.GetPluginInfo(ctx, req)
	})
}

// GetPluginCapabilities calls Identity.GetPluginCapabilities.
func (c *Client) GetPluginCapabilities(ctx context.Context, req *csipb.GetPluginCapabilitiesRequest) (*csipb.GetPluginCapabilitiesResponse, error) {
	return invoke(ctx, c, "GetPluginCapabilities", func(ctx context.Context) (*csipb.GetPluginCapabilitiesResponse, error) {
		return c.identity.GetPluginCapabilities(ctx, req)
	})
}

// Probe calls Identity.Probe.
func (c *Client) Probe(ctx context.Context, req *csipb.ProbeRequest) (*csipb.ProbeResponse, error) {
	return invoke(ctx, c, "Probe", func(ctx context.Context) (*csipb.ProbeResponse, error) {
		return c.identity.Probe(ctx, req)
	})
}

// Controller service: callers check ControllerCapabilities first, as the
// spec gates these RPCs on them.

// CreateVolume calls Controller.CreateVolume.
func (c *Client) CreateVolume(ctx context.Context, req *csipb.CreateVolumeRequest) (*csipb.CreateVolumeResponse, error) {
	return invoke(ctx, c, "CreateVolume", func(ctx context.Context) (*csipb.CreateVolumeResponse, error) {
		return c.controller.CreateVolume(ctx, req)
	})
}

// DeleteVolume calls Controller.DeleteVolume.
func (c *Client) DeleteVolume(ctx context.Context, req *csipb.DeleteVolumeRequest) (*csipb.DeleteVolumeResponse, error) {
	return invoke(ctx, c, "DeleteVolume", func(ctx context.Context) (*csipb.DeleteVolumeResponse, error) {
		return c.controller.DeleteVolume(ctx, req)
	})
}

// ControllerPublishVolume calls Controller.ControllerPublishVolume.
func (c *Client) ControllerPublishVolume(ctx context.Context, req *csipb.ControllerPublishVolumeRequest) (*csipb.ControllerPublishVolumeResponse, error) {
	return invoke(ctx, c, "ControllerPublishVolume", func(ctx context.Context) (*csipb.ControllerPublishVolumeResponse, error) {
		return c.controller.ControllerPublishVolume(ctx, req)
	})
}

// ControllerUnpublishVolume calls Controller.ControllerUnpublishVolume.
func (c *Client) ControllerUnpublishVolume(ctx context.Context, req *csipb.ControllerUnpublishVolumeRequest) (*csipb.ControllerUnpublishVolumeResponse, error) {
	return invoke(ctx, c, "ControllerUnpublishVolume", func(ctx context.Context) (*csipb.ControllerUnpublishVolumeResponse, error) {
		return c.controller.ControllerUnpublishVolume(ctx, req)
	})
}

// ValidateVolumeCapabilities calls Controller.ValidateVolumeCapabilities.
func (c *Client) ValidateVolumeCapabilities(ctx context.Context, req *csipb.ValidateVolumeCapabilitiesRequest) (*csipb.ValidateVolumeCapabilitiesResponse, error) {
	return invoke(ctx, c, "ValidateVolumeCapabilities", func(ctx context.Context) (*csipb.ValidateVolumeCapabilitiesResponse, error) {
		return c.controller.ValidateVolumeCapabilities(ctx, req)
	})
}

// ListVolumes calls Controller.ListVolumes.
func (c *Client) ListVolumes(ctx context.Context, req *csipb.ListVolumesRequest) (*csipb.ListVolumesResponse, error) {
	return invoke(ctx, c, "ListVolumes", func(ctx context.Context) (*csipb.ListVolumesResponse, error) {
		return c.controller.ListVolumes(ctx, req)
	})
}

// GetCapacity calls Controller.GetCapacity.
func (c *Client) GetCapacity(ctx context.Context, req *csipb.GetCapacityRequest) (*csipb.GetCapacityResponse, error) {
	return invoke(ctx, c, "GetCapacity", func(ctx context.Context) (*csipb.GetCapacityResponse, error) {
		return c.controller.GetCapacity(ctx, req)
	})
}

// ControllerGetCapabilities calls Controller.ControllerGetCapabilities.
func (c *Client) ControllerGetCapabilities(ctx context.Context, req *csipb.ControllerGetCapabilitiesRequest) (*csipb.ControllerGetCapabilitiesResponse, error) {
	return invoke(ctx, c, "ControllerGetCapabilities", func(ctx context.Context) (*csipb.ControllerGetCapabilitiesResponse, error) {
		return c.controller.ControllerGetCapabilities(ctx, req)
	})
}

// CreateSnapshot calls Controller.CreateSnapshot.
func (c *Client) CreateSnapshot(ctx context.Context, req *csipb.CreateSnapshotRequest) (*csipb.CreateSnapshotResponse, error) {
	return invoke(ctx, c, "CreateSnapshot", func(ctx context.Context) (*csipb.CreateSnapshotResponse, error) {
		return c.controller.CreateSnapshot(ctx, req)
	})
}

// DeleteSnapshot calls Controller.DeleteSnapshot.
func (c *Client) DeleteSnapshot(ctx context.Context, req *csipb.DeleteSnapshotRequest) (*csipb.DeleteSnapshotResponse, error) {
	return invoke(ctx, c, "DeleteSnapshot", func(ctx context.Context) (*csipb.DeleteSnapshotResponse, error) {
		return c.controller.DeleteSnapshot(ctx, req)
	})
}

// ListSnapshots calls Controller.ListSnapshots.
func (c *Client) ListSnapshots(ctx context.Context, req *csipb.ListSnapshotsRequest) (*csipb.ListSnapshotsResponse, error) {
	return invoke(ctx, c, "ListSnapshots", func(ctx context.Context) (*csipb.ListSnapshotsResponse, error) {
		return c.controller.ListSnapshots(ctx, req)
	})
}

// ControllerExpandVolume calls Controller.ControllerExpandVolume.
func (c *Client) ControllerExpandVolume(ctx context.Context, req *csipb.ControllerExpandVolumeRequest) (*csipb.ControllerExpandVolumeResponse, error) {
	return invoke(ctx, c, "ControllerExpandVolume", func(ctx context.Context) (*csipb.ControllerExpandVolumeResponse, error) {
		return c.controller.ControllerExpandVolume(ctx, req)
	})
}

// ControllerGetVolume calls Controller.ControllerGetVolume.
func (c *Client) ControllerGetVolume(ctx context.Context, req *csipb.ControllerGetVolumeRequest) (*csipb.ControllerGetVolumeResponse, error) {
	return invoke(ctx, c, "ControllerGetVolume", func(ctx context.Context) (*csipb.ControllerGetVolumeResponse, error) {
		return c.controller.ControllerGetVolume(ctx, req)
	})
}

// Node service.

// NodeStageVolume calls Node.NodeStageVolume.
func (c *Client) NodeStageVolume(ctx context.Context, req *csipb.NodeStageVolumeRequest) (*csipb.NodeStageVolumeResponse, error) {
	return invoke(ctx, c, "NodeStageVolume", func(ctx context.Context) (*csipb.NodeStageVolumeResponse, error) {
		return c.node.NodeStageVolume(ctx, req)
	})
}

// NodeUnstageVolume calls Node.NodeUnstageVolume.
func (c *Client) NodeUnstageVolume(ctx context.Context, req *csipb.NodeUnstageVolumeRequest) (*csipb.NodeUnstageVolumeResponse, error) {
	return invoke(ctx, c, "NodeUnstageVolume", func(ctx context.Context) (*csipb.NodeUnstageVolumeResponse, error) {
		return c.node.NodeUnstageVolume(ctx, req)
	})
}

// NodePublishVolume calls Node.NodePublishVolume.
func (c *Client) NodePublishVolume(ctx context.Context, req *csipb.NodePublishVolumeRequest) (*csipb.NodePublishVolumeResponse, error) {
	return invoke(ctx, c, "NodePublishVolume", func(ctx context.Context) (*csipb.NodePublishVolumeResponse, error) {
		return c.node.NodePublishVolume(ctx, req)
	})
}

// NodeUnpublishVolume calls Node.NodeUnpublishVolume.
func (c *Client) NodeUnpublishVolume(ctx context.Context, req *csipb.NodeUnpublishVolumeRequest) (*csipb.NodeUnpublishVolumeResponse, error) {
	return invoke(ctx, c, "NodeUnpublishVolume", func(ctx context.Context) (*csipb.NodeUnpublishVolumeResponse, error) {
		return c.node.NodeUnpublishVolume(ctx, req)
	})
}

// NodeGetInfo calls Node.NodeGetInfo.
func (c *Client) NodeGetInfo(ctx context.Context, req *csipb.NodeGetInfoRequest) (*csipb.NodeGetInfoResponse, error) {
	return invoke(ctx, c, "NodeGetInfo", func(ctx context.Context) (*csipb.NodeGetInfoResponse, error) {
		return c.node.NodeGetInfo(ctx, req)
	})
}

// NodeGetCapabilities calls Node.NodeGetCapabilities.
func (c *Client) NodeGetCapabilities(ctx context.Context, req *csipb.NodeGetCapabilitiesRequest) (*csipb.NodeGetCapabilitiesResponse, error) {
	return invoke(ctx, c, "NodeGetCapabilities", func(ctx context.Context) (*csipb.NodeGetCapabilitiesResponse, error) {
		return c.node.NodeGetCapabilities(ctx, req)
	})
}

// NodeGetVolumeStats calls Node.NodeGetVolumeStats.
func (c *Client) NodeGetVolumeStats(ctx context.Context, req *csipb.NodeGetVolumeStatsRequest) (*csipb.NodeGetVolumeStatsResponse, error) {
	return invoke(ctx, c, "NodeGetVolumeStats", func(ctx context.Context) (*csipb.NodeGetVolumeStatsResponse, error) {
		return c.node.NodeGetVolumeStats(ctx, req)
	})
}

// NodeExpandVolume calls Node.NodeExpandVolume.
func (c *Client) NodeExpandVolume(ctx context.Context, req *csipb.NodeExpandVolumeRequest) (*csipb.NodeExpandVolumeResponse, error) {
	return invoke(ctx, c, "NodeExpandVolume", func(ctx context.Context) (*csipb.NodeExpandVolumeResponse, error) {
		return c.node.NodeExpandVolume(ctx, req)
	})
}
