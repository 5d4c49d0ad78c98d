package volumes

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/pluginhost/pluginhost/csi"
	"github.com/pluginhost/pluginhost/csi/plugins"
	"github.com/pluginhost/pluginhost/dynamic"
)

// nodeClient is the node plugin's client with what its fingerprint says.
type nodeClient struct {
	*csi.Client
	fp *plugins.Fingerprint
}

func (n *nodeClient) canStage() bool { return n.fp.HasNodeCapability(csi.CapNodeStageUnstage) }

// node returns the client of the volume's node plugin, or why the claim
// must wait for it. A plugin's next health change queues the volume again.
func (vm *VolumeManager) node(v *Volume) (*nodeClient, string) {
	p, ok := vm.cfg.Plugins.Plugin(v.PluginID)
	if !ok {
		return nil, fmt.Sprintf("waiting for plugin %q", v.PluginID)
	}
	fp := p.Node()
	switch {
	case fp == nil:
		return nil, fmt.Sprintf("waiting for a node plugin of %q", v.PluginID)
	case !fp.Healthy:
		return nil, fmt.Sprintf("waiting for plugin %q's node to be healthy (%s)", v.PluginID, fp.HealthDescription)
	case fp.NodeInfo == nil || fp.NodeInfo.NodeID == "":
		return nil, fmt.Sprintf("waiting for plugin %q's node ID (NodeGetInfo)", v.PluginID)
	case fp.StagingDir == "":
		return nil, fmt.Sprintf("waiting for plugin %q's staging directory", v.PluginID)
	}
	c, err := vm.cfg.Plugins.Client(v.PluginID, dynamic.PluginTypeCSINode)
	if err != nil {
		return nil, fmt.Sprintf("waiting for plugin %q's node: %v", v.PluginID, err)
	}
	return &nodeClient{Client: c, fp: fp}, ""
}

// publisher returns the controller to ControllerPublish the volume with:
// nil with no wait when the plugin needs none (no controller, or one
// without PUBLISH_UNPUBLISH_VOLUME); a wait when one is required but not
// there or not healthy.
func (vm *VolumeManager) publisher(v *Volume) (*controllerClient, string) {
	p, ok := vm.cfg.Plugins.Plugin(v.PluginID)
	if !ok {
		return nil, fmt.Sprintf("waiting for plugin %q", v.PluginID)
	}
	fp := p.Controller()
	if fp == nil {
		if p.ControllerRequired {
			return nil, fmt.Sprintf("waiting for a controller of plugin %q", v.PluginID)
		}
		return nil, ""
	}
	if !fp.Healthy || !fp.FingerprintDone {
		return nil, fmt.Sprintf("waiting for plugin %q's controller to be healthy (%s)", v.PluginID, fp.HealthDescription)
	}
	if !slices.Contains(fp.ControllerCapabilities, csi.CapControllerPublish) {
		return nil, ""
	}
	c, wait := vm.controller(v)
	return c, wait
}

// claimCapability is the claim's capability in the spec's form, with its
// mount options.
func claimCapability(c *Claim) *csipb.VolumeCapability {
	return VolumeCapabilityPB(&VolumeCapability{AccessMode: c.AccessMode, AttachmentMode: c.AttachmentMode}, c.MountOptions)
}

// mountStep takes the claim's next step towards published.
func (vm *VolumeManager) mountStep(ctx context.Context, v *Volume, c *Claim) claimStep {
	if v.ExternalID == "" {
		return claimStep{wait: "waiting for the volume to be created"}
	}
	for _, o := range others(v, c) {
		if reason, _ := vm.grantRefusal(v, c, []*Claim{o}); reason != "" {
			return claimStep{wait: "waiting: " + reason}
		}
	}
	n, wait := vm.node(v)
	if wait != "" {
		return claimStep{wait: wait}
	}
	ctx, cancel := context.WithTimeout(ctx, vm.cfg.RPCTimeout)
	defer cancel()
	switch c.State {
	case ClaimPending:
		ctl, wait := vm.publisher(v)
		if wait != "" {
			return claimStep{wait: wait}
		}
		// The paths are fixed, and recorded, before any node call: a
		// release must know what to undo even if the agent dies mid-call
		// (Nomad #20550).
		usage := c.Usage()
		st := claimStep{
			name: "controller-published", next: ClaimControllerPublished,
			stagingPath: StagingPath(n.fp.StagingDir, v.ID, usage),
			targetPath:  TargetPath(n.fp.StagingDir, c.AllocID, v.ID, usage),
		}
		if ctl == nil || v.ControllerPublish == ControllerPublished {
			if ctl == nil {
				st.name = "claimed"
			}
			return st
		}
		resp, err := ctl.ControllerPublishVolume(ctx, &csipb.ControllerPublishVolumeRequest{
			VolumeId: v.ExternalID, NodeId: n.fp.NodeInfo.NodeID, VolumeCapability: claimCapability(c),
			Readonly: c.ReadOnly(), Secrets: v.Secrets, VolumeContext: v.Context,
		})
		if err != nil {
			return claimStep{name: "controller-publish", err: err}
		}
		st.setPublish, st.publish, st.nodeID = true, ControllerPublished, n.fp.NodeInfo.NodeID
		st.publishContext = resp.GetPublishContext()
		return st

	case ClaimControllerPublished:
		if !n.canStage() {
			return claimStep{name: "staged", next: ClaimStaged}
		}
		for _, o := range others(v, c) {
			if o.StagingPath == c.StagingPath && (o.State == ClaimStaged || o.State == ClaimPublished) {
				return claimStep{name: "staged", next: ClaimStaged} // staged for o already
			}
		}
		if err := vm.mkdirAll(c.StagingPath); err != nil {
			return claimStep{name: "stage", err: fmt.Errorf("staging path: %w", err)}
		}
		_, err := n.NodeStageVolume(ctx, &csipb.NodeStageVolumeRequest{
			VolumeId: v.ExternalID, PublishContext: v.PublishContext, StagingTargetPath: c.StagingPath,
			VolumeCapability: claimCapability(c), Secrets: v.Secrets, VolumeContext: v.Context,
		})
		if err != nil {
			return claimStep{name: "stage", err: err}
		}
		return claimStep{name: "staged", next: ClaimStaged}

	case ClaimStaged:
		// The CO makes the parent; the plugin makes the leaf (CSI spec).
		if err := vm.mkdirAll(filepath.Dir(c.TargetPath)); err != nil {
			return claimStep{name: "publish", err: fmt.Errorf("target path: %w", err)}
		}
		req := &csipb.NodePublishVolumeRequest{
			VolumeId: v.ExternalID, PublishContext: v.PublishContext, TargetPath: c.TargetPath,
			VolumeCapability: claimCapability(c), Readonly: c.ReadOnly(), Secrets: v.Secrets, VolumeContext: v.Context,
		}
		if n.canStage() {
			req.StagingTargetPath = c.StagingPath
		}
		if _, err := n.NodePublishVolume(ctx, req); err != nil {
			return claimStep{name: "publish", err: err}
		}
		return claimStep{name: "mounted", next: ClaimPublished}
	}
	return claimStep{name: "mounted", next: ClaimPublished}
}

// releaseStep takes the claim's next step towards being forgotten:
// NodeUnpublish, NodeUnstage when no other claim uses the staging path,
// ControllerUnpublish with the volume's last claim. Each undoes the step
// the claim recorded and the one after it, which may have been in flight.
func (vm *VolumeManager) releaseStep(ctx context.Context, v *Volume, c *Claim) claimStep {
	ctx, cancel := context.WithTimeout(ctx, vm.cfg.RPCTimeout)
	defer cancel()
	switch c.State {
	case ClaimStaged, ClaimPublished:
		n, wait := vm.node(v)
		if wait != "" {
			return claimStep{wait: "release " + wait}
		}
		_, err := n.NodeUnpublishVolume(ctx, &csipb.NodeUnpublishVolumeRequest{VolumeId: v.ExternalID, TargetPath: c.TargetPath})
		if err != nil && !isNotFound(err) {
			return claimStep{name: "unpublish", err: err}
		}
		vm.removeEmpty(c.TargetPath, filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(c.TargetPath)))))
		return claimStep{name: "unpublished", next: ClaimUnpublished}

	case ClaimControllerPublished:
		return claimStep{name: "unpublished", next: ClaimUnpublished}

	case ClaimUnpublished:
		for _, o := range others(v, c) {
			if o.StagingPath == c.StagingPath && o.mayUseStaging() {
				// Someone still stands on it (Nomad #25813): keep it.
				return claimStep{name: "unstaged", next: ClaimUnstaged}
			}
		}
		n, wait := vm.node(v)
		if wait != "" {
			return claimStep{wait: "release " + wait}
		}
		if !n.canStage() {
			return claimStep{name: "unstaged", next: ClaimUnstaged}
		}
		_, err := n.NodeUnstageVolume(ctx, &csipb.NodeUnstageVolumeRequest{VolumeId: v.ExternalID, StagingTargetPath: c.StagingPath})
		if err != nil && !isNotFound(err) {
			return claimStep{name: "unstage", err: err}
		}
		vm.removeEmpty(c.StagingPath, filepath.Dir(filepath.Dir(filepath.Dir(c.StagingPath))))
		return claimStep{name: "unstaged", next: ClaimUnstaged}
	}

	// Pending or unstaged: only the controller's side can be left, and
	// only with the volume's last claim.
	if len(others(v, c)) > 0 {
		return claimStep{name: "released", removed: true}
	}
	// The publish is recorded once it is done, not before: a publish
	// that may be in flight (a claim released while pending) is undone
	// by asking any controller that can publish. ControllerUnpublish of
	// what is not published answers OK (CSI spec).
	ctl, wait := vm.publisher(v)
	switch {
	case wait != "" && v.ControllerPublish == ControllerPublished:
		return claimStep{wait: "release " + wait}
	case ctl == nil || ctl.Client == nil:
		return claimStep{name: "released", removed: true, setPublish: true}
	}
	nodeID := v.NodeID
	if nodeID == "" {
		if n, _ := vm.node(v); n != nil {
			nodeID = n.fp.NodeInfo.NodeID
		}
	}
	_, err := ctl.ControllerUnpublishVolume(ctx, &csipb.ControllerUnpublishVolumeRequest{
		VolumeId: v.ExternalID, NodeId: nodeID, Secrets: v.Secrets,
	})
	if err != nil && !isNotFound(err) {
		return claimStep{name: "controller-unpublish", err: err}
	}
	return claimStep{name: "released", removed: true, setPublish: true}
}
