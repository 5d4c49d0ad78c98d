package jobs

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// Alloc is one allocation as a pass sees it: a snapshot of its runner,
// taken once per pass, and what the reconciler knows of the runner.
type Alloc struct {
	Snap *taskrunner.AllocSnapshot
	// Done: the runner finished (every task dead, or it was let go of).
	Done bool
	// Started: Run was called. Allocations are recorded before they are
	// started, and a pass starts them once nothing superseded is alive.
	Started bool
	// Stopping: a stop was started and is under way.
	Stopping bool
}

// ID is the allocation's ID.
func (a Alloc) ID() string { return a.Snap.Alloc.ID }

func (a Alloc) wantsRun() bool { return a.Snap.Alloc.DesiredStatus == state.AllocDesiredStatusRun }

// View is everything a pass decides from.
type View struct {
	// Job is the job's record and current spec; nil when the store has
	// none (purged, or never recorded whole).
	Job *state.JobState
	// Allocs are every allocation of the job the agent tracks, newest
	// first.
	Allocs []Alloc
	// Exclusive: the current spec writes to a volume that allows one
	// writer, so no two versions may run side by side.
	Exclusive bool
	// Stable is the newest version whose roll-out succeeded, if HasStable.
	Stable    uint64
	HasStable bool
	// Serving is the version that served when the current one was
	// submitted, if HasServing (state.Job.Serving).
	Serving    uint64
	HasServing bool
	Now        time.Time
}

// Slot names an allocation slot: a group and an index within its count.
type Slot struct {
	Group string
	Index int
}

// Stop is an allocation to stop and why; Reason ends up in its tasks'
// Killing events.
type Stop struct {
	AllocID string
	Reason  string
}

// Plan is what a pass does, in this order: record the roll-out's
// outcome, stop, create and start allocations, forget finished ones and
// the job, submit the last stable version again. A pass that is cut short
// (a crash, an error) leaves nothing the next pass would not derive again
// from the record.
type Plan struct {
	// Outcome, when set, is recorded on the job before anything else.
	Outcome *state.UpdateOutcome
	// MarkStable, when set, is an earlier version found healthy now that
	// no outcome records as such: it is recorded as the last stable one.
	MarkStable *uint64
	Stops      []Stop
	// Superseded are the versions stopped because a newer one replaced
	// them before they were healthy; each gets a job event.
	Superseded []uint64
	// Create are slots of the current version without an allocation.
	Create []Slot
	// StartNew: start what Create records, and Start the allocations of
	// the current version recorded but not started yet. False while an
	// allocation of a superseded version is still alive, so that a group
	// never runs more than the last healthy version and the newest.
	StartNew bool
	Start    []string
	// Forget are finished allocations to destroy (record, directories).
	Forget []string
	// DeleteJob: forget the job's record once Forget is done.
	DeleteJob bool
	// Revert: the current version failed; submit the newest stable
	// version again (auto_revert).
	Revert bool
	// RequeueAfter asks for another pass while a roll-out is undecided.
	RequeueAfter time.Duration
}

// Reasons given in the Killing events of allocations a pass stops.
const (
	ReasonJobStopped   = "job stopped"
	ReasonJobPurged    = "job purged"
	ReasonOutsideSlots = "allocation outside its version's slots"
	ReasonUpdateFailed = "update failed"
	ReasonExclusive    = "the new version needs its single-writer volume"
)

func reasonReplaced(v uint64) string { return fmt.Sprintf("replaced by healthy version %d", v) }

func reasonSuperseded(v uint64) string {
	return fmt.Sprintf("superseded by version %d before it became healthy", v)
}

// Decide is a reconcile pass's decision, a pure function of what the store
// records and what the allocations' snapshots show.
//
// The roll-out is bounded: at any moment a group runs at most the
// allocations of the last healthy (stable) version, of the version that
// served when the newest was submitted, and of the newest. A version
// superseded before it ever served is stopped at once, and the newest
// version's allocations start only once the superseded ones are dead.
// Updates stay health-gated: the stable and the serving version keep
// serving until the newest is healthy (judgeRollout), then they stop; a
// newest version that fails is stopped instead when an older one is there
// to serve. Without the bound, a job updated faster than its versions
// become healthy ran every unfinished version side by side (150 task
// processes for a count of 3, 50 updates 200 ms apart); without the
// serving version, a plugin updated less than min_healthy_time after it
// became healthy was stopped at once, and an update that never became
// healthy left no plugin at all.
func Decide(v View) Plan {
	p := decide(v)
	// What a pass stops it does not start.
	p.Start = slices.DeleteFunc(p.Start, func(id string) bool {
		return slices.ContainsFunc(p.Stops, func(s Stop) bool { return s.AllocID == id })
	})
	return p
}

func decide(v View) Plan {
	var p Plan
	if v.Job == nil {
		// Forgotten (purged): nothing of it may run or remain.
		p.forgetAll(v.Allocs, ReasonJobPurged)
		return p
	}
	rec, spec := v.Job.Job, v.Job.Spec.Job
	if rec.Stop {
		reason := ReasonJobStopped
		if rec.Purge {
			reason = ReasonJobPurged
		}
		for _, a := range v.Allocs {
			p.stop(a, reason)
		}
		if rec.Purge && allDone(v.Allocs) {
			p.forgetAll(v.Allocs, reason)
			p.DeleteJob = true
		}
		return p
	}

	cur, old, extra := splitByVersion(spec, rec.Version, v.Allocs)
	for _, a := range extra {
		p.stop(a, ReasonOutsideSlots)
	}
	// An earlier version that is healthy now was healthy, whether or not a
	// pass judged it before the next submission arrived (a plugin healthy
	// a moment before its job is updated): it is the one to keep serving.
	if hv, ok := healthyEarlier(old, v, rec.Version); ok {
		v.Stable, v.HasStable = hv, true
		p.MarkStable = &hv
	}
	// The stable and the serving version's allocations are the only
	// earlier ones that may keep running; every other earlier version was
	// superseded.
	var keep []Alloc
	for _, a := range old {
		av := a.Snap.Alloc.JobVersion
		switch {
		case v.keeps(av) && av != rec.Version:
			keep = append(keep, a)
		case !v.HasStable || av > v.Stable:
			if p.stop(a, reasonSuperseded(rec.Version)) && !containsVersion(p.Superseded, av) {
				p.Superseded = append(p.Superseded, av)
			}
		default:
			p.stop(a, reasonReplaced(v.Stable))
		}
	}

	if rec.Failed(rec.Version) {
		p.failed(cur, keep, spec)
		return p
	}
	for _, g := range spec.TaskGroups {
		for i := 0; i < g.Count; i++ {
			if _, ok := cur[Slot{g.Name, i}]; !ok {
				p.Create = append(p.Create, Slot{g.Name, i})
			}
		}
	}
	// The newest version starts once no superseded allocation is alive:
	// the stable version's and its own are all that may run.
	// Stopped ones count until they are dead: a stop takes up to the
	// tasks' kill_timeout.
	p.StartNew = true
	for _, a := range v.Allocs {
		av := a.Snap.Alloc.JobVersion
		if !a.Done && av != rec.Version && !v.keeps(av) {
			p.StartNew = false
		}
	}
	if p.StartNew {
		for _, a := range cur {
			if !a.Started {
				p.Start = append(p.Start, a.ID())
			}
		}
	}
	// The stable and the serving version may always run (a slot of one
	// refilled just before a crash is restored unstarted).
	for _, a := range keep {
		if !a.Started {
			p.Start = append(p.Start, a.ID())
		}
	}
	if v.Exclusive {
		// The new allocations need what the old ones hold (a volume that
		// allows one writer): as Nomad's destructive update does, the old
		// ones stop first, and their claims are released before the new
		// ones mount.
		for _, a := range keep {
			p.stop(a, ReasonExclusive)
		}
	}
	if rec.Update != nil && rec.Update.Version == rec.Version {
		// Rolled out already: the earlier versions have no business.
		for _, a := range keep {
			p.stop(a, reasonReplaced(rec.Version))
		}
		return p
	}
	if len(p.Create) > 0 {
		// Judged once every slot is filled; their events add the job.
		return p
	}
	snaps := make([]*taskrunner.AllocSnapshot, 0, len(cur))
	for _, a := range cur {
		snaps = append(snaps, a.Snap)
	}
	verdict := judgeRollout(spec, snaps, v.Now)
	switch {
	case verdict.healthy:
		p.Outcome = &state.UpdateOutcome{Version: rec.Version, Status: state.UpdateSuccessful,
			Description: "all allocations healthy", Time: v.Now}
		for _, a := range keep {
			p.stop(a, reasonReplaced(rec.Version))
		}
	case verdict.unhealthy != "":
		p.Outcome = &state.UpdateOutcome{Version: rec.Version, Status: state.UpdateFailed,
			Description: verdict.unhealthy, Time: v.Now}
		p.failed(cur, keep, spec)
	default:
		p.RequeueAfter = verdict.wait
	}
	return p
}

// failed handles a current version whose roll-out failed: its allocations
// stop when an earlier version is there to keep serving, and with
// auto_revert the last stable version is submitted again. It is decided on
// every pass while the failed version is current, so an agent killed
// between recording the failure and submitting the revert still reverts
// when it starts; once submitted, the failed version is no longer current.
func (p *Plan) failed(cur map[Slot]Alloc, keep []Alloc, spec *jobspec.Job) {
	if len(keep) > 0 {
		for _, a := range cur {
			p.stop(a, ReasonUpdateFailed)
		}
	}
	for _, g := range spec.TaskGroups {
		p.Revert = p.Revert || UpdateOf(g).AutoRevert
	}
}

// stop adds a stop of a (once), unless it is stopped or stopping already;
// it reports whether it did.
func (p *Plan) stop(a Alloc, reason string) bool {
	if a.Stopping || a.Done && !a.wantsRun() {
		return false
	}
	for _, s := range p.Stops {
		if s.AllocID == a.ID() {
			return false
		}
	}
	p.Stops = append(p.Stops, Stop{AllocID: a.ID(), Reason: reason})
	return true
}

// forgetAll destroys the allocations that are done and stops the others;
// their stops add the job again when they are done.
func (p *Plan) forgetAll(allocs []Alloc, reason string) {
	for _, a := range allocs {
		if a.Done {
			p.Forget = append(p.Forget, a.ID())
		} else {
			p.stop(a, reason)
		}
	}
}

// splitByVersion sorts a job's allocations into the current version's that
// should run, one per slot (by slot), the earlier (or later) versions' that
// should run (old), and the current version's that hold no slot it has or
// duplicate one (extra; the oldest of a slot is kept). A stopped
// allocation holds no slot: only one that should run stands for its slot,
// whatever else the store holds (found by the chaos test, seed 11).
func splitByVersion(spec *jobspec.Job, version uint64, allocs []Alloc) (cur map[Slot]Alloc, old, extra []Alloc) {
	want := map[Slot]bool{}
	for _, g := range spec.TaskGroups {
		for i := 0; i < g.Count; i++ {
			want[Slot{g.Name, i}] = true
		}
	}
	cur = map[Slot]Alloc{}
	// allocs are newest first: walk them oldest first so the oldest
	// allocation of a slot is the one kept.
	for i := len(allocs) - 1; i >= 0; i-- {
		a := allocs[i]
		al := a.Snap.Alloc
		k := Slot{al.TaskGroup, al.Index}
		_, taken := cur[k]
		switch {
		case !a.wantsRun():
		case al.JobVersion != version:
			old = append(old, a)
		case !want[k] || taken:
			extra = append(extra, a)
		default:
			cur[k] = a
		}
	}
	return cur, old, extra
}

// healthyEarlier finds the newest version before current, newer than the
// recorded stable one, whose allocations (one per slot of its own spec)
// are all healthy now.
func healthyEarlier(old []Alloc, v View, current uint64) (uint64, bool) {
	byVersion := map[uint64][]*taskrunner.AllocSnapshot{}
	for _, a := range old {
		av := a.Snap.Alloc.JobVersion
		if av < current && (!v.HasStable || av > v.Stable) {
			byVersion[av] = append(byVersion[av], a.Snap)
		}
	}
	versions := make([]uint64, 0, len(byVersion))
	for av := range byVersion {
		versions = append(versions, av)
	}
	slices.Sort(versions)
	for _, av := range slices.Backward(versions) {
		snaps := byVersion[av]
		spec := snaps[0].Alloc.Job
		if spec == nil {
			continue
		}
		if len(snaps) == slotCount(spec) && judgeRollout(spec, snaps, v.Now).healthy {
			return av, true
		}
	}
	return 0, false
}

// keeps reports whether version av is one an update keeps running until
// the newest is healthy: the stable one, or the one that served when the
// newest was submitted.
func (v View) keeps(av uint64) bool {
	return v.HasStable && av == v.Stable || v.HasServing && av == v.Serving
}

// ServingVersion is what serves when an update arrives: the stable
// version if its allocations (one per slot of its own spec) are all healthy
// now, or else the newest version whose are, for however short a time. The
// stable version comes first so that a roll-out stays within two versions
// whenever the stable one serves; a third runs only while the stable one
// is down and a younger one serves in its place. A version with an
// allocation that is starting, restarting or dead does not serve.
func ServingVersion(allocs []Alloc, stable uint64, hasStable bool) (uint64, bool) {
	byVersion := map[uint64][]*taskrunner.AllocSnapshot{}
	for _, a := range allocs {
		if a.wantsRun() && !a.Stopping && !a.Done {
			av := a.Snap.Alloc.JobVersion
			byVersion[av] = append(byVersion[av], a.Snap)
		}
	}
	if hasStable && serves(byVersion[stable]) {
		return stable, true
	}
	versions := slices.Sorted(maps.Keys(byVersion))
	for _, av := range slices.Backward(versions) {
		if serves(byVersion[av]) {
			return av, true
		}
	}
	return 0, false
}

// serves reports whether a version's allocations fill its slots and are
// all healthy now.
func serves(snaps []*taskrunner.AllocSnapshot) bool {
	if len(snaps) == 0 || snaps[0].Alloc.Job == nil || len(snaps) != slotCount(snaps[0].Alloc.Job) {
		return false
	}
	spec := snaps[0].Alloc.Job
	for _, s := range snaps {
		if _, ok := healthySince(s.Tasks, spec, s.Alloc.TaskGroup); !ok {
			return false
		}
	}
	return true
}

func slotCount(spec *jobspec.Job) int {
	n := 0
	for _, g := range spec.TaskGroups {
		n += g.Count
	}
	return n
}

func allDone(allocs []Alloc) bool {
	for _, a := range allocs {
		if !a.Done {
			return false
		}
	}
	return true
}

func containsVersion(vs []uint64, v uint64) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}
