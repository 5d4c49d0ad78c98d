package volumes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/pluginhost/pluginhost/internal/reconcile"
)

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
			stepCtx, done := vm.inflight.start(ctx, claimKey{id, allocID}, mountCall(c.State))
			st = vm.mountStep(stepCtx, v, c)
			if done() && st.err != nil {
				// A release cancelled the call: nothing to record, the
				// release undoes it, now. Read under the record's lock,
				// which the release holds until it has committed.
				unlock := vm.recMu.lock(id)
				v, err = vm.cfg.Store.Volume(id)
				unlock()
				if errors.Is(err, ErrVolumeNotFound) {
					return nil
				}
				if err != nil {
					return err
				}
				continue
			}
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
