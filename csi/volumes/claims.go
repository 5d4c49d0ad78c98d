package volumes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// AllocSource tells the volume code whether an allocation is over. The
// agent implements it on its state store: a claim whose allocation ended
// (all its tasks dead) or no longer exists is released by the reconciler on
// its own, so no claim is ever stuck behind an allocation nobody will stop.
type AllocSource interface {
	AllocEnded(allocID string) (bool, error)
}

// ClaimRequest asks for an allocation's use of a volume.
type ClaimRequest struct {
	VolumeID  string
	AllocID   string
	JobID     string
	TaskGroup string
	ReadOnly  bool
	// AccessMode and AttachmentMode must be one of the volume's
	// capabilities.
	AccessMode     string
	AttachmentMode string
	// MountOptions are the job's; nil keeps the volume's.
	MountOptions *MountOptions
}

// ClaimError is a claim that cannot be granted: which volume, and why
// (usually another allocation's claim, named with its job).
type ClaimError struct {
	VolumeID string
	// Field is the request's field at fault, for API errors.
	Field  string
	Reason string
}

func (e *ClaimError) Error() string { return fmt.Sprintf("volume %q: %s", e.VolumeID, e.Reason) }

// CheckClaims reports whether every request could be granted now, and why
// not: a missing volume, a mode the volume does not offer, a write claim
// on a reader-only volume, or a claim another allocation holds. Claims of
// the allocations replaced reports true for (an update's older versions,
// which stop before their successors mount) do not count; the requests
// count against each other. It writes nothing.
func (vm *VolumeManager) CheckClaims(reqs []ClaimRequest, replaced func(allocID string) bool) error {
	byVol := map[string][]ClaimRequest{}
	for _, r := range reqs {
		byVol[r.VolumeID] = append(byVol[r.VolumeID], r)
	}
	ids := make([]string, 0, len(byVol))
	for id := range byVol {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var errs []error
	for _, id := range ids {
		v, err := vm.cfg.Store.Volume(id)
		if errors.Is(err, ErrVolumeNotFound) {
			errs = append(errs, &ClaimError{VolumeID: id, Field: "Source",
				Reason: "no such volume; create or register it first (`pluginhost volume create`)"})
			continue
		}
		if err != nil {
			return err
		}
		var holders []*Claim
		for _, c := range v.Claims {
			if replaced == nil || !replaced(c.AllocID) {
				holders = append(holders, c)
			}
		}
		for _, r := range byVol[id] {
			c := newClaim(v, r, time.Time{})
			if reason, field := vm.grantRefusal(v, c, holders); reason != "" {
				errs = append(errs, &ClaimError{VolumeID: id, Field: field, Reason: reason})
				break
			}
			holders = append(holders, c)
		}
	}
	return errors.Join(errs...)
}

// grantRefusal says why c cannot join holders on v ("" if it can), and the
// request field at fault.
func (vm *VolumeManager) grantRefusal(v *Volume, c *Claim, holders []*Claim) (reason, field string) {
	if v.Desired != DesiredPresent {
		return fmt.Sprintf("the volume is being %s", v.Desired), "Source"
	}
	if !slices.ContainsFunc(v.RequestedCapabilities, func(vc *VolumeCapability) bool {
		return vc.AccessMode == c.AccessMode && vc.AttachmentMode == c.AttachmentMode
	}) {
		var offered []string
		for _, vc := range v.RequestedCapabilities {
			offered = append(offered, vc.AccessMode+"/"+vc.AttachmentMode)
		}
		return fmt.Sprintf("the volume offers no capability %s/%s (it has %s)", c.AccessMode, c.AttachmentMode,
			strings.Join(offered, ", ")), "AccessMode"
	}
	if strings.HasSuffix(c.AccessMode, "-reader-only") && c.Mode == ClaimWrite {
		return fmt.Sprintf("access mode %s allows only read claims; set read_only = true", c.AccessMode), "ReadOnly"
	}
	if p, ok := vm.cfg.Plugins.Plugin(v.PluginID); ok && p.Node() == nil && p.Controller() != nil {
		return fmt.Sprintf("plugin %q has no node service here, so nothing can mount its volumes", v.PluginID), "Source"
	}
	for _, h := range holders {
		if h.AllocID == c.AllocID {
			continue
		}
		if h.AccessMode != c.AccessMode || h.AttachmentMode != c.AttachmentMode {
			return fmt.Sprintf("allocation %s (job %q) holds a %s/%s claim; every claim of a volume uses one mode",
				h.AllocID, h.JobID, h.AccessMode, h.AttachmentMode), "AccessMode"
		}
		if OneWriter(c.AccessMode) && c.Mode == ClaimWrite && h.Mode == ClaimWrite {
			return fmt.Sprintf("%s allows one writer, and allocation %s (job %q, group %q) holds the write claim",
				c.AccessMode, h.AllocID, h.JobID, h.TaskGroup), "Source"
		}
	}
	return "", ""
}

func newClaim(v *Volume, r ClaimRequest, now time.Time) *Claim {
	c := &Claim{
		AllocID: r.AllocID, JobID: r.JobID, TaskGroup: r.TaskGroup, Mode: ClaimWrite,
		AccessMode: r.AccessMode, AttachmentMode: r.AttachmentMode,
		Desired: ClaimMounted, State: ClaimPending, StateDescription: "queued",
		CreateTime: now, ModifyTime: now,
	}
	if r.ReadOnly {
		c.Mode = ClaimRead
	}
	// The job's mount options win; the volume's fill in its file system.
	c.MountOptions = r.MountOptions.clone()
	switch {
	case c.MountOptions == nil:
		c.MountOptions = v.MountOptions.clone()
	case c.MountOptions.FSType == "" && v.MountOptions != nil:
		c.MountOptions.FSType = v.MountOptions.FSType
	}
	return c
}

// Claim records the requests' claims (idempotent: an allocation's existing
// claim stays as it is) and queues the work of mounting them. It grants
// nothing on its own: CheckClaims decides at submission, and a claim that
// meets another's at mount time waits for it to be released.
func (vm *VolumeManager) Claim(reqs []ClaimRequest) error {
	now := time.Now()
	for _, r := range reqs {
		if err := vm.claimOne(r, now); err != nil {
			return err
		}
	}
	return nil
}

func (vm *VolumeManager) claimOne(r ClaimRequest, now time.Time) error {
	defer vm.recMu.lock(r.VolumeID)()
	v, err := vm.cfg.Store.Volume(r.VolumeID)
	if err != nil {
		return fmt.Errorf("claiming volume %q for allocation %s: %w", r.VolumeID, r.AllocID, err)
	}
	if c := v.claim(r.AllocID); c != nil {
		return nil
	}
	if v.Desired != DesiredPresent {
		return &ClaimError{VolumeID: r.VolumeID, Field: "Source", Reason: fmt.Sprintf("the volume is being %s", v.Desired)}
	}
	v.Claims = append(v.Claims, newClaim(v, r, now))
	slices.SortFunc(v.Claims, func(a, b *Claim) int { return cmp.Compare(a.AllocID, b.AllocID) })
	v.ModifyTime = now
	return vm.commit(v, true)
}

// Release records that the allocation is done with volumeIDs, the volumes
// it claimed, and queues the unwinding. Nothing waits for it: the
// reconciler finishes it, also after a restart; a claim on a volume left
// out here is released by the volume's next pass once the allocation has
// ended (releaseEnded).
func (vm *VolumeManager) Release(allocID string, volumeIDs []string) error {
	var errs []error
	for _, id := range volumeIDs {
		v, err := vm.cfg.Store.Volume(id)
		if errors.Is(err, ErrVolumeNotFound) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if c := v.claim(allocID); c != nil && c.Desired != ClaimReleased {
			errs = append(errs, vm.setClaimsReleased(id, func(c *Claim) bool { return c.AllocID == allocID }))
		}
	}
	return errors.Join(errs...)
}

// setClaimsReleased marks the claims of volume id that match as released
// and queues the volume.
func (vm *VolumeManager) setClaimsReleased(id string, match func(c *Claim) bool) error {
	defer vm.recMu.lock(id)()
	v, err := vm.cfg.Store.Volume(id)
	if errors.Is(err, ErrVolumeNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	changed := false
	for _, c := range v.Claims {
		if c.Desired != ClaimReleased && match(c) {
			c.Desired, c.StateDescription, c.Attempts, c.LastError = ClaimReleased, "release queued", 0, ""
			if what := vm.inflight.release(claimKey{id, c.AllocID}); what != "" {
				c.StateDescription += " (" + what + ")"
				vm.log.Info("claim released while a plugin call was in flight", "volume", id, "alloc_id", c.AllocID, "call", what)
			}
			c.ModifyTime = time.Now()
			changed = true
		}
	}
	if !changed {
		vm.queue.Add(id)
		return nil
	}
	v.ModifyTime = time.Now()
	return vm.commit(v, true)
}

// releaseEnded releases the claims of volume id whose allocations ended
// or are gone; it returns how many.
func (vm *VolumeManager) releaseEnded(id string) (int, error) {
	if vm.cfg.Allocs == nil {
		return 0, nil
	}
	v, err := vm.cfg.Store.Volume(id)
	if err != nil {
		return 0, err
	}
	return vm.releaseEndedOf(id, v.Claims)
}

// releaseEndedOf is releaseEnded of the claims as already read.
func (vm *VolumeManager) releaseEndedOf(id string, claims []*Claim) (int, error) {
	if vm.cfg.Allocs == nil {
		return 0, nil
	}
	ended := map[string]bool{}
	for _, c := range claims {
		if c.Desired == ClaimReleased {
			continue
		}
		done, err := vm.cfg.Allocs.AllocEnded(c.AllocID)
		if err != nil {
			return 0, fmt.Errorf("volume %q: status of allocation %s: %w", id, c.AllocID, err)
		}
		if done {
			ended[c.AllocID] = true
		}
	}
	if len(ended) == 0 {
		return 0, nil
	}
	vm.log.Info("releasing claims of ended allocations", "volume", id, "count", len(ended))
	return len(ended), vm.setClaimsReleased(id, func(c *Claim) bool { return ended[c.AllocID] })
}

// Detach releases the claims on the volume whose allocations have ended
// (Nomad's `volume detach`) and returns how many. The reconciler does the
// same on its own; Detach does it now, for a user who wants to watch.
func (vm *VolumeManager) Detach(id string) (int, error) {
	if _, err := vm.cfg.Store.Volume(id); err != nil {
		return 0, err
	}
	n, err := vm.releaseEnded(id)
	vm.queue.Add(id)
	return n, err
}

// DeregisterForce is Deregister for a volume whose claims are all held by
// allocations that ended (Nomad's `volume deregister -force`): their claims
// are released (unpublished and unstaged) and then the volume is
// forgotten. A claim of a running allocation still refuses it.
func (vm *VolumeManager) DeregisterForce(id string) (*Volume, error) {
	if _, err := vm.releaseEnded(id); err != nil {
		return nil, err
	}
	return vm.Deregister(id)
}

// WaitReleased waits until no released claim of the volume is left (each
// was unwound and forgotten) and returns the record.
func (vm *VolumeManager) WaitReleased(ctx context.Context, id string) (*Volume, error) {
	v, err := vm.waitRecord(ctx, id, func(v *Volume, err error) (bool, error) {
		if err != nil {
			return true, err
		}
		return !slices.ContainsFunc(v.Claims, func(c *Claim) bool { return c.Desired == ClaimReleased }), nil
	})
	if err != nil && errors.Is(err, ctx.Err()) {
		return v, fmt.Errorf("volume %q: claims still being released: %w", id, err)
	}
	return v, err
}

// liveClaims returns the claims of v that are not released, for errors
// that refuse to remove a volume in use.
func liveClaims(v *Volume) []string {
	var out []string
	for _, c := range v.Claims {
		if c.Desired != ClaimReleased {
			out = append(out, fmt.Sprintf("%s (job %q)", c.AllocID, c.JobID))
		}
	}
	return out
}

// ClaimOf returns a copy of the allocation's claim on the volume.
func (vm *VolumeManager) ClaimOf(volumeID, allocID string) (*Claim, error) {
	v, err := vm.cfg.Store.Volume(volumeID)
	if err != nil {
		return nil, err
	}
	c := v.claim(allocID)
	if c == nil {
		return nil, fmt.Errorf("volume %q: allocation %s has no claim: %w", volumeID, allocID, ErrClaimFailed)
	}
	return c, nil
}

// ErrClaimFailed wraps why an allocation's claim can never be mounted.
var ErrClaimFailed = errors.New("volume claim failed")

// WaitMounted waits until the allocation's claim on the volume is
// published and returns it; it fails when the claim failed, was released
// or is gone, and when ctx ends (with what the claim was waiting for).
func (vm *VolumeManager) WaitMounted(ctx context.Context, volumeID, allocID string) (*Claim, error) {
	var c *Claim
	_, err := vm.waitRecord(ctx, volumeID, func(v *Volume, err error) (bool, error) {
		if err != nil {
			return true, err
		}
		c = v.claim(allocID)
		switch {
		case c == nil:
			return true, fmt.Errorf("volume %q: allocation %s has no claim: %w", volumeID, allocID, ErrClaimFailed)
		case c.Failed:
			return true, fmt.Errorf("volume %q: %s: %s: %w", volumeID, c.StateDescription, c.LastError, ErrClaimFailed)
		case c.Desired == ClaimReleased:
			return true, fmt.Errorf("volume %q: the claim was released: %w", volumeID, ErrClaimFailed)
		}
		return c.Mounted(), nil
	})
	switch {
	case err != nil && errors.Is(err, ctx.Err()):
		why := c.StateDescription
		if c.LastError != "" {
			why += " (last error: " + c.LastError + ")"
		}
		return nil, fmt.Errorf("volume %q not mounted: %s: %w", volumeID, why, err)
	case err != nil:
		return nil, err
	}
	return c, nil
}
