// Package claimhook is the allocation's side of CSI volume claims (Nomad's
// csi_hook): before any task starts, the allocation's claims are recorded
// (if submission did not already) and waited for until the volume
// reconciler (package csi) has published each one; the tasks then get bind
// mounts of the published paths at their volume_mount destinations
// (package nsexec). When every task is dead, the claims are released and
// the reconciler unwinds them. It also states a job's claims for the
// agent: which volumes, which requests, whether they can be granted, and
// whether a volume allows only one writer (an update then stops the old
// allocations first).
package claimhook

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/csi/volumes"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/nsexec"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// hookName is the hook's name in task events.
const hookName = "csi_volumes"

// EventVolumesWaiting is the task event of an allocation whose volumes are
// not mounted yet when it starts.
const EventVolumesWaiting = "Waiting for volumes"

// volumeSource is the volume a group's volume block claims for one
// allocation: per_alloc appends the allocation's index, as in Nomad.
func volumeSource(vr *jobspec.VolumeRequest, index int) string {
	if vr.PerAlloc {
		return vr.Source + "[" + strconv.Itoa(index) + "]"
	}
	return vr.Source
}

// VolumeAliases are a group's volume aliases, sorted: the order of
// ClaimRequests, which callers pair with it.
func VolumeAliases(g *jobspec.TaskGroup) []string {
	aliases := make([]string, 0, len(g.Volumes))
	for alias := range g.Volumes {
		aliases = append(aliases, alias)
	}
	slices.Sort(aliases)
	return aliases
}

// ClaimRequests are the claims of allocation index of group, in
// VolumeAliases order.
func ClaimRequests(job *jobspec.Job, g *jobspec.TaskGroup, allocID string, index int) []volumes.ClaimRequest {
	aliases := VolumeAliases(g)
	out := make([]volumes.ClaimRequest, 0, len(aliases))
	for _, alias := range aliases {
		vr := g.Volumes[alias]
		r := volumes.ClaimRequest{
			VolumeID: volumeSource(vr, index), AllocID: allocID, JobID: job.ID, TaskGroup: g.Name,
			ReadOnly: vr.ReadOnly, AccessMode: vr.AccessMode, AttachmentMode: vr.AttachmentMode,
		}
		if mo := vr.MountOptions; mo != nil {
			r.MountOptions = &volumes.MountOptions{FSType: mo.FSType, MountFlags: slices.Clone(mo.MountFlags)}
		}
		out = append(out, r)
	}
	return out
}

// Check refuses a job whose volume claims cannot be granted, naming the
// volume and the claim in the way, before anything is recorded. The job's
// own allocations (own reports which) do not count: the new version
// replaces them (and the job reconciler stops them first when they hold
// what it needs).
func Check(vm *volumes.VolumeManager, job *jobspec.Job, own func(allocID string) bool) error {
	var reqs []volumes.ClaimRequest
	for _, g := range job.TaskGroups {
		for i := 0; i < g.Count; i++ {
			reqs = append(reqs, ClaimRequests(job, g, fmt.Sprintf("(new %s[%d])", g.Name, i), i)...)
		}
	}
	if len(reqs) == 0 {
		return nil
	}
	if err := vm.CheckClaims(reqs, own); err != nil {
		return fmt.Errorf("volume claims of job %q: %w", job.ID, err)
	}
	return nil
}

// ClaimAllocs records the claims of freshly prepared allocations in the
// transaction that records them, so that the next submission's Check sees
// them and the volume reconciler starts on them without a commit of their
// own; the hook makes them again (idempotently), and is the one that fails
// an allocation whose claim cannot be made.
func ClaimAllocs(tx *state.Tx, claims *volumes.ClaimsTx, job *jobspec.Job, allocs []*state.Alloc) error {
	for _, al := range allocs {
		g := job.Group(al.TaskGroup)
		if g == nil || len(g.Volumes) == 0 {
			continue
		}
		if err := claims.Claim(tx, ClaimRequests(job, g, al.ID, al.Index)); err != nil {
			return fmt.Errorf("allocation %s: %w", al.ID, err)
		}
	}
	return nil
}

// VolumeIDs are the volumes the job's allocations claim.
func VolumeIDs(job *jobspec.Job) []string {
	var out []string
	for _, g := range job.TaskGroups {
		for _, vr := range g.Volumes {
			for i := 0; i < g.Count; i++ {
				out = append(out, volumeSource(vr, i))
				if !vr.PerAlloc {
					break
				}
			}
		}
	}
	return out
}

// Hook is the allocation hook of an allocation with volumes. It is
// handed what it uses, as Nomad's newCSIHook is, not the agent.
type Hook struct {
	Volumes *volumes.VolumeManager
	// MountTimeout bounds the wait for the volumes (csi.volume_mount_timeout).
	MountTimeout time.Duration
	Logger       hclog.Logger
}

// Name is the hook's name in task events.
func (Hook) Name() string { return hookName }

// Prerun claims and waits for every volume of the allocation, bounded by
// csi.volume_mount_timeout, then gives each task its bind mounts.
func (h Hook) Prerun(ctx context.Context, req *taskrunner.AllocHookRequest) error {
	reqs := ClaimRequests(req.Job, req.Group, req.AllocID, req.Index)
	if err := h.Volumes.Claim(reqs); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, h.MountTimeout)
	defer cancel()
	claims := map[string]*volumes.Claim{} // by alias
	for i, alias := range VolumeAliases(req.Group) {
		vid := reqs[i].VolumeID
		if c, err := h.Volumes.ClaimOf(vid, req.AllocID); err == nil && !c.Mounted() {
			req.Note(EventVolumesWaiting, fmt.Sprintf("Waiting for volume %q (%s) to be mounted", alias, vid))
		}
		c, err := h.Volumes.WaitMounted(ctx, vid, req.AllocID)
		if err != nil {
			return fmt.Errorf("volume %q: %w", alias, err)
		}
		claims[alias] = c
	}
	mounts := make(map[string][]nsexec.Mount)
	for _, t := range req.Group.Tasks {
		for _, vm := range t.VolumeMounts {
			c := claims[vm.Volume]
			if c == nil {
				continue
			}
			target := vm.Destination
			switch {
			case t.Driver == jobspec.DriverExec:
				// A path inside the task's own root.
				target = filepath.Join("/", target)
			case !filepath.IsAbs(target):
				target = filepath.Join(req.TaskDirs[t.Name], target)
			}
			mounts[t.Name] = append(mounts[t.Name], nsexec.Mount{
				Source: c.TargetPath, Target: filepath.Clean(target),
				ReadOnly: vm.ReadOnly || c.ReadOnly(),
				File:     c.AttachmentMode == jobspec.AttachmentModeBlockDevice,
			})
		}
	}
	req.Mounts = mounts
	return nil
}

// Postrun releases the allocation's claims; the reconciler unwinds them.
func (h Hook) Postrun(req *taskrunner.AllocHookRequest) {
	var ids []string
	for _, r := range ClaimRequests(req.Job, req.Group, req.AllocID, req.Index) {
		if !slices.Contains(ids, r.VolumeID) {
			ids = append(ids, r.VolumeID)
		}
	}
	if err := h.Volumes.Release(req.AllocID, ids); err != nil {
		h.Logger.Warn("releasing volume claims; the reconciler retries at its next pass", "alloc_id", req.AllocID, "error", err)
	}
}

// Exclusive reports whether the job writes to a volume that
// allows one writer: its allocations of different versions cannot hold the
// volume together, so an update stops the old ones first.
func Exclusive(job *jobspec.Job) bool {
	for _, g := range job.TaskGroups {
		for _, vr := range g.Volumes {
			if !vr.ReadOnly && volumes.OneWriter(vr.AccessMode) {
				return true
			}
		}
	}
	return false
}
