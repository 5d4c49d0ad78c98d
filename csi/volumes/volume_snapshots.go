package volumes

import (
	"context"
	"fmt"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pluginhost/pluginhost/csi"
	"github.com/pluginhost/pluginhost/dynamic"
)

// Snapshot is a volume snapshot as the plugin reports it.
type Snapshot struct {
	ID       string
	PluginID string
	// SourceVolumeID is the plugin's volume ID; SourceVolume is the agent's
	// volume of that ID when it knows one.
	SourceVolumeID string
	SourceVolume   string
	Name           string
	Size           int64
	CreateTime     time.Time
	ReadyToUse     bool
}

// ExternalVolume is one volume the plugin reports (ListVolumes).
type ExternalVolume struct {
	ExternalID string
	Capacity   int64
	// Volume is the agent's volume of that external ID, "" when the volume
	// is not registered.
	Volume           string
	PublishedNodeIDs []string
}

// Snapshots and listings are one CSI call each, idempotent by the spec
// (CreateSnapshot by name), so they are made in the request rather than
// recorded and queued; a snapshot runs in its source volume's queue slot,
// so it never overlaps a create, expand or delete of the volume.

// CreateSnapshot snapshots a volume. name defaults to "<volume>-<unix nano
// seconds>".
func (vm *VolumeManager) CreateSnapshot(ctx context.Context, volumeID, name string) (*Snapshot, error) {
	v, err := vm.cfg.Store.Volume(volumeID)
	if err != nil {
		return nil, err
	}
	if v.ExternalID == "" {
		return nil, requestErrorf("SourceVolumeID", "volume %q does not exist at its plugin yet (%s)", v.ID, v.StateDescription)
	}
	c, err := vm.readyController(v.PluginID, csi.CapCreateDeleteSnapshot)
	if err != nil {
		return nil, err
	}
	if name == "" {
		name = fmt.Sprintf("%s-%d", v.ID, time.Now().UnixNano())
	}
	var snap *Snapshot
	err = vm.queue.Exclusive(ctx, v.ID, func() error {
		cctx, cancel := context.WithTimeout(ctx, vm.cfg.RPCTimeout)
		defer cancel()
		resp, err := c.CreateSnapshot(cctx, &csipb.CreateSnapshotRequest{
			SourceVolumeId: v.ExternalID, Name: name, Secrets: v.Secrets,
		})
		if err != nil {
			return fmt.Errorf("snapshot of volume %q: %w", v.ID, err)
		}
		snap = fromSnapshot(v.PluginID, resp.GetSnapshot())
		snap.SourceVolume = v.ID
		return nil
	})
	return snap, err
}

// DeleteSnapshot deletes a snapshot at its plugin; an unknown one is not an
// error (the spec's NOT_FOUND means done).
func (vm *VolumeManager) DeleteSnapshot(ctx context.Context, pluginID, snapshotID string) error {
	c, err := vm.readyController(pluginID, csi.CapCreateDeleteSnapshot)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, vm.cfg.RPCTimeout)
	defer cancel()
	if _, err := c.DeleteSnapshot(ctx, &csipb.DeleteSnapshotRequest{SnapshotId: snapshotID}); err != nil && !isNotFound(err) {
		return fmt.Errorf("deleting snapshot %q of plugin %q: %w", snapshotID, pluginID, err)
	}
	return nil
}

// ListSnapshots lists a plugin's snapshots, following its pagination.
func (vm *VolumeManager) ListSnapshots(ctx context.Context, pluginID string) ([]*Snapshot, error) {
	c, err := vm.readyController(pluginID, csi.CapListSnapshots)
	if err != nil {
		return nil, err
	}
	byExternal := vm.externalIndex()
	return paginate(ctx, vm.cfg.RPCTimeout, fmt.Sprintf("snapshots of plugin %q", pluginID),
		func(ctx context.Context, token string) ([]*Snapshot, string, error) {
			resp, err := c.ListSnapshots(ctx, &csipb.ListSnapshotsRequest{StartingToken: token})
			var page []*Snapshot
			for _, e := range resp.GetEntries() {
				s := fromSnapshot(pluginID, e.GetSnapshot())
				s.SourceVolume = byExternal[s.SourceVolumeID]
				page = append(page, s)
			}
			return page, resp.GetNextToken(), err
		})
}

// ExternalVolumes lists the volumes a plugin reports (ListVolumes,
// following its pagination), each with the agent's volume of that ID.
func (vm *VolumeManager) ExternalVolumes(ctx context.Context, pluginID string) ([]*ExternalVolume, error) {
	c, err := vm.readyController(pluginID, csi.CapListVolumes)
	if err != nil {
		return nil, err
	}
	byExternal := vm.externalIndex()
	return paginate(ctx, vm.cfg.RPCTimeout, fmt.Sprintf("volumes of plugin %q", pluginID),
		func(ctx context.Context, token string) ([]*ExternalVolume, string, error) {
			resp, err := c.ListVolumes(ctx, &csipb.ListVolumesRequest{StartingToken: token})
			var page []*ExternalVolume
			for _, e := range resp.GetEntries() {
				id := e.GetVolume().GetVolumeId()
				page = append(page, &ExternalVolume{ExternalID: id, Capacity: e.GetVolume().GetCapacityBytes(),
					Volume: byExternal[id], PublishedNodeIDs: e.GetStatus().GetPublishedNodeIds()})
			}
			return page, resp.GetNextToken(), err
		})
}

// maxPages bounds a paginated listing, so a plugin that keeps answering
// with a next token cannot keep a request running for ever.
const maxPages = 10000

// paginate follows a CSI listing's next_token to the end, each page call
// bounded by timeout; what names the listing in errors.
func paginate[E any](ctx context.Context, timeout time.Duration, what string,
	page func(ctx context.Context, token string) ([]E, string, error)) ([]E, error) {
	var out []E
	token := ""
	for n := 0; ; n++ {
		if n > maxPages {
			return out, fmt.Errorf("listing %s: more than %d pages", what, maxPages)
		}
		pctx, cancel := context.WithTimeout(ctx, timeout)
		items, next, err := page(pctx, token)
		cancel()
		if err != nil {
			return out, fmt.Errorf("listing %s: %w", what, err)
		}
		out = append(out, items...)
		if token = next; token == "" {
			return out, nil
		}
	}
}

// externalIndex maps external IDs to the agent's volume IDs.
func (vm *VolumeManager) externalIndex() map[string]string {
	out := map[string]string{}
	vols, err := vm.cfg.Store.Volumes()
	if err != nil {
		vm.log.Warn("listing volumes", "error", err)
		return out
	}
	for _, v := range vols {
		if v.ExternalID != "" {
			out[v.ExternalID] = v.ID
		}
	}
	return out
}

// readyController returns the client of a plugin's healthy controller that
// has capability, or a RequestError saying why there is none.
func (vm *VolumeManager) readyController(pluginID, capability string) (*controllerClient, error) {
	p, ok := vm.cfg.Plugins.Plugin(pluginID)
	if !ok {
		return nil, requestErrorf("PluginID", "no CSI plugin %q is running", pluginID)
	}
	fp := p.Controller()
	switch {
	case fp == nil:
		return nil, requestErrorf("PluginID", "plugin %q has no controller", pluginID)
	case !fp.Healthy:
		return nil, requestErrorf("PluginID", "plugin %q's controller is not healthy: %s", pluginID, fp.HealthDescription)
	}
	c, err := vm.cfg.Plugins.Client(pluginID, dynamic.PluginTypeCSIController)
	if err != nil {
		return nil, err
	}
	cc := &controllerClient{Client: c, caps: fp.ControllerCapabilities}
	if !cc.has(capability) {
		return nil, requestErrorf("PluginID", "plugin %q cannot do this: it lacks the %s capability", pluginID, capability)
	}
	return cc, nil
}

func fromSnapshot(pluginID string, s *csipb.Snapshot) *Snapshot {
	out := &Snapshot{ID: s.GetSnapshotId(), PluginID: pluginID, SourceVolumeID: s.GetSourceVolumeId(),
		Size: s.GetSizeBytes(), ReadyToUse: s.GetReadyToUse()}
	if t := s.GetCreationTime(); t != nil {
		out.CreateTime = t.AsTime()
	}
	return out
}

func isNotFound(err error) bool { return status.Code(err) == codes.NotFound }
