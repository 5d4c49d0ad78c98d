package csi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pluginhost/pluginhost/internal/reconcile"
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
		oneWriter := c.AccessMode == "single-node-writer" || c.AccessMode == "multi-node-single-writer"
		if oneWriter && c.Mode == ClaimWrite && h.Mode == ClaimWrite {
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
	switch {
	case r.MountOptions != nil:
		mo := *r.MountOptions
		mo.MountFlags = slices.Clone(r.MountOptions.MountFlags)
		if mo.FSType == "" && v.MountOptions != nil {
			mo.FSType = v.MountOptions.FSType
		}
		c.MountOptions = &mo
	case v.MountOptions != nil:
		mo := *v.MountOptions
		mo.MountFlags = slices.Clone(v.MountOptions.MountFlags)
		c.MountOptions = &mo
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

// Release records that the allocation is done with its volumes and queues
// the unwinding. Nothing waits for it: the reconciler finishes it, also
// after a restart.
func (vm *VolumeManager) Release(allocID string) error {
	vols, err := vm.cfg.Store.Volumes()
	if err != nil {
		return err
	}
	var errs []error
	for _, v := range vols {
		if c := v.claim(allocID); c != nil && c.Desired != ClaimReleased {
			errs = append(errs, vm.setClaimsReleased(v.ID, func(c *Claim) bool { return c.AllocID == allocID }))
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
	for {
		vm.mu.Lock()
		changed := vm.changed
		vm.mu.Unlock()
		v, err := vm.cfg.Store.Volume(id)
		if err != nil {
			return nil, err
		}
		left := slices.ContainsFunc(v.Claims, func(c *Claim) bool { return c.Desired == ClaimReleased })
		if !left {
			return v, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return v, fmt.Errorf("volume %q: claims still being released: %w", id, ctx.Err())
		}
	}
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
	for {
		vm.mu.Lock()
		changed := vm.changed
		vm.mu.Unlock()
		v, err := vm.cfg.Store.Volume(volumeID)
		if err != nil {
			return nil, err
		}
		c := v.claim(allocID)
		switch {
		case c == nil:
			return nil, fmt.Errorf("volume %q: allocation %s has no claim: %w", volumeID, allocID, ErrClaimFailed)
		case c.Mounted():
			return c, nil
		case c.Failed:
			return nil, fmt.Errorf("volume %q: %s: %s: %w", volumeID, c.StateDescription, c.LastError, ErrClaimFailed)
		case c.Desired == ClaimReleased:
			return nil, fmt.Errorf("volume %q: the claim was released: %w", volumeID, ErrClaimFailed)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			why := c.StateDescription
			if c.LastError != "" {
				why += " (last error: " + c.LastError + ")"
			}
			return nil, fmt.Errorf("volume %q not mounted: %s: %w", volumeID, why, ctx.Err())
		}
	}
}

// reconcile is the queue's Func: one pass over one volume. A volume that
// should exist gets its own work done first (a claim needs the volume to
// exist), then its claims'; a volume being removed has its claims
// unwound first (only released ones can be left by then), then goes.
func (vm *VolumeManager) reconcile(ctx context.Context, id string) (reconcile.Result, error) {
	// The record is read once for the pass and handed down: whatever a
	// request changes after this read queues the volume again (its Add
	// during a pass asks for one more), and every write below re-reads
	// the record under its lock.
	v, err := vm.cfg.Store.Volume(id)
	if errors.Is(err, ErrVolumeNotFound) {
		vm.queue.Forget(id)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	claims := slices.Clone(v.Claims)
	if v.Desired == DesiredPresent {
		if !v.Settled() {
			if res, err := vm.reconcileVolume(ctx, v); err != nil || res != (reconcile.Result{}) {
				return res, err
			}
		}
		return reconcile.Result{}, vm.reconcileClaims(ctx, id, claims)
	}
	if len(claims) > 0 {
		if err := vm.reconcileClaims(ctx, id, claims); err != nil {
			return reconcile.Result{}, err
		}
		if v, err = vm.cfg.Store.Volume(id); err != nil || len(v.Claims) > 0 {
			return reconcile.Result{}, err // waiting for a plugin; PluginChanged queues it
		}
	}
	return vm.reconcileVolume(ctx, v)
}

// reconcileClaims works on every claim of the volume that has work (claims,
// as the pass read them), releases first (they free what mounts may wait
// for), one durable step at a time.
func (vm *VolumeManager) reconcileClaims(ctx context.Context, id string, claims []*Claim) error {
	if len(claims) == 0 {
		return nil
	}
	if _, err := vm.releaseEndedOf(id, claims); err != nil {
		return err
	}
	order := slices.Clone(claims)
	slices.SortStableFunc(order, func(a, b *Claim) int {
		return cmp.Compare(claimRank(a), claimRank(b))
	})
	var errs []error
	for _, c := range order {
		if err := vm.workClaim(ctx, id, c.AllocID); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func claimRank(c *Claim) int {
	if c.Desired == ClaimReleased {
		return 0
	}
	return 1
}

// maxClaimSteps bounds one claim's steps in a pass; a claim takes at most
// seven, so more means a bug, which must not spin.
const maxClaimSteps = 10

// workClaim takes the claim's steps until it is settled, must wait, or a
// step fails. Each step works from the record as its predecessor left it
// (read under the record's lock when the outcome was recorded), and records
// its outcome before the next.
func (vm *VolumeManager) workClaim(ctx context.Context, id, allocID string) error {
	v, err := vm.cfg.Store.Volume(id)
	if errors.Is(err, ErrVolumeNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	for range maxClaimSteps {
		c := v.claim(allocID)
		if c == nil || c.settled() {
			return nil
		}
		var st claimStep
		if c.Desired == ClaimReleased {
			st = vm.releaseStep(ctx, v, c)
		} else {
			st = vm.mountStep(ctx, v, c)
		}
		if st.err != nil && ctx.Err() != nil {
			return ctx.Err() // stopping: the step is redone at the next start
		}
		next, err := vm.recordClaimStep(id, allocID, st)
		if err != nil {
			return err
		}
		switch {
		case st.err != nil && !permanent(st.err):
			return fmt.Errorf("volume %q, allocation %s: %s: %w", id, allocID, st.name, st.err)
		case st.err != nil, st.wait != "", st.removed, next == nil:
			return nil
		}
		v = next
	}
	return fmt.Errorf("volume %q, allocation %s: claim did not settle in %d steps", id, allocID, maxClaimSteps)
}

// claimStep is what one step did: its name, the claim's next state (or
// wait: why nothing could be done), and changes to the volume's own
// ControllerPublish fields.
type claimStep struct {
	name string
	wait string
	err  error

	next        ClaimState
	stagingPath string
	targetPath  string
	removed     bool

	setPublish     bool
	publish        ControllerPublishState
	publishContext map[string]string
	nodeID         string
}

// recordClaimStep writes a step's outcome into the current record: the
// progress is a fact about what the plugin did, so it is kept whatever
// request came meanwhile (a release only changes Desired). It returns the
// record as it now stands (nil when the volume or the claim is gone), which
// the caller owns.
func (vm *VolumeManager) recordClaimStep(id, allocID string, st claimStep) (*Volume, error) {
	defer vm.recMu.lock(id)()
	v, err := vm.cfg.Store.Volume(id)
	if errors.Is(err, ErrVolumeNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c := v.claim(allocID)
	if c == nil {
		return nil, nil
	}
	now := time.Now()
	if st.setPublish {
		v.ControllerPublish, v.PublishContext, v.NodeID = st.publish, st.publishContext, st.nodeID
	}
	switch {
	case st.removed:
		v.removeClaim(allocID)
		vm.log.Info("claim released", "volume", id, "alloc_id", allocID)
	case st.err != nil:
		c.Attempts++
		c.LastError = st.err.Error()
		if permanent(st.err) {
			c.Failed = true
			c.StateDescription = st.name + " failed"
			vm.log.Warn("volume claim failed for good", "volume", id, "alloc_id", allocID, "step", st.name, "error", st.err)
		} else {
			c.StateDescription = fmt.Sprintf("%s: attempt %d failed, retrying", st.name, c.Attempts)
		}
	case st.wait != "":
		if c.StateDescription == st.wait && !st.setPublish {
			return v, nil // nothing new to record
		}
		c.StateDescription = st.wait
	default:
		c.State, c.StateDescription, c.Attempts, c.LastError = st.next, st.name, 0, ""
		if st.stagingPath != "" || st.targetPath != "" {
			c.StagingPath, c.TargetPath = st.stagingPath, st.targetPath
		}
	}
	c.ModifyTime, v.ModifyTime = now, now
	if err := vm.commit(v, false); err != nil {
		return nil, err
	}
	return v, nil
}

// others returns the volume's claims other than c.
func others(v *Volume, c *Claim) []*Claim {
	out := make([]*Claim, 0, len(v.Claims))
	for _, o := range v.Claims {
		if o.AllocID != c.AllocID {
			out = append(out, o)
		}
	}
	return out
}

// removeEmpty removes dir and then its parents up to (not including) stop,
// as long as they are empty: the paths the agent created for a mount go
// with it. A directory that is still a mount point or holds anything
// stays, which is what a leaked mount must do.
func removeEmpty(dir, stop string) {
	for dir != stop && strings.HasPrefix(dir, stop+string(filepath.Separator)) {
		if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			return
		}
		dir = filepath.Dir(dir)
	}
}

// VolumeTx is a write transaction of the store that holds the volume
// records, shared with records of the caller's: the agent records a new
// allocation's claims in the transaction that records the allocation, so
// that one commit makes both durable.
type VolumeTx interface {
	// Volume returns one record as the transaction sees it,
	// ErrVolumeNotFound if there is none.
	Volume(id string) (*Volume, error)
	// PutVolume inserts or replaces a record in the transaction.
	PutVolume(v *Volume) error
}

// ClaimsTx records claims inside a caller's transaction (VolumeTx). It
// holds the record locks of its volumes from BeginClaims to End, so no
// request or pass writes those records between the transaction's read and
// its commit; the caller must therefore not wait, inside it, for anything
// that writes a volume record.
type ClaimsTx struct {
	vm      *VolumeManager
	unlocks []func()
	written map[string]*Volume
	now     time.Time
}

// BeginClaims locks the records of the volumes that claims in the coming
// transaction may name (in ID order, so two callers never deadlock). End
// must follow.
func (vm *VolumeManager) BeginClaims(volumeIDs []string) *ClaimsTx {
	ids := slices.Clone(volumeIDs)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	ct := &ClaimsTx{vm: vm, written: map[string]*Volume{}, now: time.Now()}
	for _, id := range ids {
		ct.unlocks = append(ct.unlocks, vm.recMu.lock(id))
	}
	return ct
}

// Claim records the requests' claims in tx, as Claim does, except that a
// claim that cannot be recorded now (the volume is gone or being removed)
// is left out rather than failing the transaction: the allocation's volume
// hook claims again, and fails the allocation with the reason. Only
// volumes passed to BeginClaims may be named.
func (ct *ClaimsTx) Claim(tx VolumeTx, reqs []ClaimRequest) error {
	for _, r := range reqs {
		v, err := tx.Volume(r.VolumeID)
		if errors.Is(err, ErrVolumeNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("claiming volume %q for allocation %s: %w", r.VolumeID, r.AllocID, err)
		}
		if v.claim(r.AllocID) != nil || v.Desired != DesiredPresent {
			continue
		}
		v.Claims = append(v.Claims, newClaim(v, r, ct.now))
		slices.SortFunc(v.Claims, func(a, b *Claim) int { return cmp.Compare(a.AllocID, b.AllocID) })
		v.ModifyTime = ct.now
		if err := tx.PutVolume(v); err != nil {
			return fmt.Errorf("claiming volume %q for allocation %s: %w", r.VolumeID, r.AllocID, err)
		}
		ct.written[v.ID] = v
	}
	return nil
}

// End releases the record locks. With committed (the transaction is
// durable) the claimed volumes are announced and queued, as Claim does;
// without, what Claim wrote is forgotten with the rolled-back transaction.
func (ct *ClaimsTx) End(committed bool) {
	if committed {
		ids := slices.Sorted(maps.Keys(ct.written))
		for _, id := range ids {
			ct.vm.changedVolume(ct.written[id], false)
			ct.vm.queue.Add(id)
		}
	}
	ct.written = nil
	for i := len(ct.unlocks) - 1; i >= 0; i-- {
		ct.unlocks[i]()
	}
	ct.unlocks = nil
}
