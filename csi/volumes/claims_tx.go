package volumes

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

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
