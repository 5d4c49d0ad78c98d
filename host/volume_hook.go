package host

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/csi/volumes"
	apiserver "github.com/pluginhost/pluginhost/host/api"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/nsexec"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// The allocation's side of volume claims (Nomad's csi_hook): before any
// task starts, the allocation's claims are recorded (if submission did not
// already) and waited for until the volume reconciler has published each
// one; the tasks then get bind mounts of the published paths at their
// volume_mount destinations (package nsexec). When every task is dead,
// the claims are released; the reconciler unwinds them.

// volumeHookName is the hook's name in task events.
const volumeHookName = "csi_volumes"

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

// volumeAliases are a group's volume aliases, sorted: the order of
// claimRequests, which callers pair with it.
func volumeAliases(g *jobspec.TaskGroup) []string {
	aliases := make([]string, 0, len(g.Volumes))
	for alias := range g.Volumes {
		aliases = append(aliases, alias)
	}
	slices.Sort(aliases)
	return aliases
}

// claimRequests are the claims of allocation index of group, in
// volumeAliases order.
func claimRequests(job *jobspec.Job, g *jobspec.TaskGroup, allocID string, index int) []volumes.ClaimRequest {
	aliases := volumeAliases(g)
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

// checkClaims refuses a job whose volume claims cannot be granted, naming
// the volume and the claim in the way, before anything is recorded. The
// job's own allocations do not count: the new version replaces them (and
// reconcileJob stops them first when they hold what it needs).
func (a *Agent) checkClaims(job *jobspec.Job) error {
	var reqs []volumes.ClaimRequest
	for _, g := range job.TaskGroups {
		for i := 0; i < g.Count; i++ {
			reqs = append(reqs, claimRequests(job, g, fmt.Sprintf("(new %s[%d])", g.Name, i), i)...)
		}
	}
	if len(reqs) == 0 {
		return nil
	}
	err := a.volumes.CheckClaims(reqs, func(allocID string) bool { return a.allocJob(allocID) == job.ID })
	if err == nil {
		return nil
	}
	return &apiserver.FieldError{Field: "Job.TaskGroups.Volumes", Err: err}
}

// allocJob returns the job of a tracked allocation, "" if unknown.
func (a *Agent) allocJob(allocID string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e := a.allocs[allocID]; e != nil {
		return e.jobID
	}
	return ""
}

// claimAllocs records the claims of freshly prepared allocations in the
// transaction that records them, so that the next submission's checkClaims
// sees them and the volume reconciler starts on them without a commit of
// their own; the volume hook makes them again (idempotently), and is the
// one that fails an allocation whose claim cannot be made.
func (a *Agent) claimAllocs(tx *state.Tx, claims *volumes.ClaimsTx, job *jobspec.Job, runners []*taskrunner.AllocRunner) error {
	for _, ar := range runners {
		snap := ar.State().Alloc
		g := groupOf(job, snap.TaskGroup)
		if g == nil || len(g.Volumes) == 0 {
			continue
		}
		if err := claims.Claim(tx, claimRequests(job, g, ar.ID(), snap.Index)); err != nil {
			return fmt.Errorf("allocation %s: %w", ar.ID(), err)
		}
	}
	return nil
}

// jobVolumeIDs are the volumes the job's allocations claim.
func jobVolumeIDs(job *jobspec.Job) []string {
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

// AllocEnded implements csi.AllocSource from the state store.
func (a *Agent) AllocEnded(allocID string) (bool, error) { return a.db.AllocEnded(allocID) }

// volumeHook is the allocation hook; one per allocation with volumes.
type volumeHook struct {
	a *Agent
}

func (volumeHook) Name() string { return volumeHookName }

// Prerun claims and waits for every volume of the allocation, bounded by
// csi.volume_mount_timeout, then gives each task its bind mounts.
func (h volumeHook) Prerun(ctx context.Context, req *taskrunner.AllocHookRequest) error {
	reqs := claimRequests(req.Job, req.Group, req.AllocID, req.Index)
	if err := h.a.volumes.Claim(reqs); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, h.a.cfg.CSI.VolumeMountTimeout)
	defer cancel()
	claims := map[string]*volumes.Claim{} // by alias
	for i, alias := range volumeAliases(req.Group) {
		vid := reqs[i].VolumeID
		if c, err := h.a.volumes.ClaimOf(vid, req.AllocID); err == nil && !c.Mounted() {
			req.Note(EventVolumesWaiting, fmt.Sprintf("Waiting for volume %q (%s) to be mounted", alias, vid))
		}
		c, err := h.a.volumes.WaitMounted(ctx, vid, req.AllocID)
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
func (h volumeHook) Postrun(req *taskrunner.AllocHookRequest) {
	var ids []string
	for _, r := range claimRequests(req.Job, req.Group, req.AllocID, req.Index) {
		if !slices.Contains(ids, r.VolumeID) {
			ids = append(ids, r.VolumeID)
		}
	}
	if err := h.a.volumes.Release(req.AllocID, ids); err != nil {
		h.a.logger.Warn("releasing volume claims; the reconciler retries at its next pass", "alloc_id", req.AllocID, "error", err)
	}
}

// holdsExclusiveVolume reports whether the job writes to a volume that
// allows one writer: its allocations of different versions cannot hold the
// volume together, so an update stops the old ones first.
func holdsExclusiveVolume(job *jobspec.Job) bool {
	for _, g := range job.TaskGroups {
		for _, vr := range g.Volumes {
			if !vr.ReadOnly && volumes.OneWriter(vr.AccessMode) {
				return true
			}
		}
	}
	return false
}

// allocVolumes lists an allocation's volumes with its claim on each.
func (a *Agent) allocVolumes(ar *taskrunner.AllocRunner) []*api.AllocVolume {
	snap := ar.State().Alloc
	g := groupOf(snap.Job, snap.TaskGroup)
	if g == nil || len(g.Volumes) == 0 {
		return nil
	}
	aliases := volumeAliases(g)
	var out []*api.AllocVolume
	for i, r := range claimRequests(snap.Job, g, ar.ID(), snap.Index) {
		av := &api.AllocVolume{Name: aliases[i], VolumeID: r.VolumeID, ReadOnly: r.ReadOnly}
		if v, err := a.volumes.Volume(r.VolumeID); err == nil {
			av.PluginID = v.PluginID
			for _, c := range v.Claims {
				if c.AllocID == ar.ID() {
					av.Claim = apiClaim(c)
				}
			}
		}
		out = append(out, av)
	}
	return out
}
