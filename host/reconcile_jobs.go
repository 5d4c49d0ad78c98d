package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/host/taskrunner"
	"github.com/pluginhost/pluginhost/internal/reconcile"
)

// reconcileJob moves a job's allocations towards its durable record: the
// allocations of the current version exist, one per group index; those of
// earlier versions stop once the current ones are healthy, and a version
// that fails its roll-out is stopped instead (update_health.go); a stopped job's allocations stop; a
// purged job is forgotten once they have. Every step is either recorded
// before it is taken or derived again from the record on the next pass, so
// an agent killed at any point finishes the work when it starts again.
//
// It runs on the job queue (one pass per job at a time) and holds jobMu
// while it decides, so that it never sees a version submit has recorded
// without the runners submit started for it. Stops run in the background:
// a pass never waits for a kill_timeout.
func (a *Agent) reconcileJob(ctx context.Context, jobID string) (reconcile.Result, error) {
	a.jobMu.Lock()
	defer a.jobMu.Unlock()
	js, err := a.db.Job(jobID)
	switch {
	case errors.Is(err, state.ErrJobNotFound):
		// Forgotten (purged): nothing of it may run or remain.
		return reconcile.Result{}, a.forget(jobID, a.jobAllocs(jobID))
	case err != nil:
		return reconcile.Result{}, err
	}
	entries := a.jobAllocs(jobID)
	if js.Job.Stop {
		for _, e := range entries {
			a.stopAsync(e)
		}
		if !js.Job.Purge || !allDone(entries) {
			return reconcile.Result{}, nil
		}
		if err := a.forget(jobID, entries); err != nil {
			return reconcile.Result{}, err
		}
		if err := a.db.Update(func(tx *state.Tx) error { return tx.DeleteJob(jobID) }); err != nil {
			return reconcile.Result{}, fmt.Errorf("forgetting job %q: %w", jobID, err)
		}
		a.logger.Info("job purged", "job_id", jobID)
		a.jobQueue.Forget(jobID)
		return reconcile.Result{}, nil
	}

	cur, old := a.splitByVersion(js, entries)
	if js.Job.Failed(js.Job.Version) {
		return reconcile.Result{}, a.failedVersion(js, cur, old)
	}
	if err := a.createMissing(js, cur); err != nil {
		return reconcile.Result{}, err
	}
	if len(old) > 0 && holdsExclusiveVolume(js.Spec.Job) {
		// The new allocations need what the old ones hold (a volume that
		// allows one writer): as Nomad's destructive update does, the old
		// ones stop first, and their claims are released before the new
		// ones mount.
		for _, e := range old {
			a.stopAsync(e)
		}
	}
	if js.Job.Update != nil && js.Job.Update.Version == js.Job.Version {
		// Rolled out already: the previous versions have no business.
		for _, e := range old {
			a.stopAsync(e)
		}
		return reconcile.Result{}, nil
	}
	// The previous version keeps running until the new one is healthy
	// (update_health.go), so a plugin is never left without an instance
	// while its new version starts; a new version that fails is stopped
	// and the previous one stays.
	verdict := judgeRollout(js.Spec.Job, a.jobAllocsOfVersion(jobID, js.Job.Version), time.Now())
	switch {
	case verdict.healthy:
		if err := a.finishUpdate(js, state.UpdateSuccessful, "all allocations healthy"); err != nil {
			return reconcile.Result{}, err
		}
		for _, e := range old {
			a.stopAsync(e)
		}
		return reconcile.Result{}, nil
	case verdict.unhealthy != "":
		a.logger.Warn("job update failed", "job_id", jobID, "version", js.Job.Version, "reason", verdict.unhealthy)
		if err := a.finishUpdate(js, state.UpdateFailed, verdict.unhealthy); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, a.failedVersion(js, cur, old)
	}
	return reconcile.Result{RequeueAfter: verdict.wait}, nil
}

// failedVersion handles a current version whose roll-out failed: its
// allocations stop when an earlier version is there to keep serving, and
// with auto_revert the last stable version is submitted again. It runs on
// every pass while the failed version is current, so an agent killed
// between recording the failure and submitting the revert still reverts
// when it starts; once submitted, the failed version is no longer current.
func (a *Agent) failedVersion(js *state.JobState, cur map[giKey]*allocEntry, old []*allocEntry) error {
	if len(old) > 0 {
		for _, e := range cur {
			a.stopAsync(e)
		}
	}
	return a.autoRevert(js)
}

// finishUpdate records how the current version's roll-out ended.
func (a *Agent) finishUpdate(js *state.JobState, status, why string) error {
	out := &state.UpdateOutcome{Version: js.Job.Version, Status: status, Description: why, Time: time.Now()}
	if err := a.db.Update(func(tx *state.Tx) error { return tx.FinishUpdate(js.Job.ID, out) }); err != nil {
		return fmt.Errorf("recording the update of job %q: %w", js.Job.ID, err)
	}
	js.Job.Update = out
	typ := "JobUpdateSucceeded"
	if status == state.UpdateFailed {
		typ = "JobUpdateFailed"
	}
	a.events.publish(&api.Event{Topic: api.TopicJob, Type: typ, Key: js.Job.ID,
		Payload: api.EventPayload{JobID: js.Job.ID, Message: fmt.Sprintf("version %d: %s", js.Job.Version, why)}})
	return nil
}

// autoRevert submits the newest stable version again when a failed
// version's groups ask for auto_revert, as Nomad does.
func (a *Agent) autoRevert(js *state.JobState) error {
	want := false
	for _, g := range js.Spec.Job.TaskGroups {
		want = want || updateOf(g).AutoRevert
	}
	if !want {
		return nil
	}
	versions, err := a.db.JobVersions(js.Job.ID)
	if err != nil {
		return err
	}
	for _, v := range versions {
		if v.Stable && v.Version != js.Job.Version {
			a.logger.Info("job update failed, reverting to the last stable version", "job_id", js.Job.ID, "version", v.Version)
			_, err := a.submitLocked(v.Job)
			if err == nil {
				a.jobQueue.Add(js.Job.ID)
			}
			return err
		}
	}
	a.logger.Debug("job update failed and auto_revert found no stable version", "job_id", js.Job.ID)
	return nil
}

// giKey names an allocation slot: a group and an index within its count.
type giKey struct {
	group string
	index int
}

// splitByVersion sorts a job's allocations that should run into the
// current version's, one per slot (returned by slot), and the rest, which
// must stop: earlier versions, slots the version does not have, and
// duplicates of a slot (the oldest is kept).
func (a *Agent) splitByVersion(js *state.JobState, entries []*allocEntry) (cur map[giKey]*allocEntry, old []*allocEntry) {
	want := map[giKey]bool{}
	for _, g := range js.Spec.Job.TaskGroups {
		for i := 0; i < g.Count; i++ {
			want[giKey{g.Name, i}] = true
		}
	}
	cur = map[giKey]*allocEntry{}
	// entries are newest first: walk them oldest first so the oldest
	// allocation of a slot is the one kept.
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		al := e.runner.State().Alloc
		k := giKey{al.TaskGroup, al.Index}
		switch {
		case al.JobVersion != js.Job.Version:
			if al.DesiredStatus == state.AllocDesiredStatusRun {
				old = append(old, e)
			}
		case al.DesiredStatus != state.AllocDesiredStatusRun:
			// A stopped allocation holds no slot: only one that should
			// run stands for its slot, whatever else the store holds.
		case !want[k] || cur[k] != nil:
			if al.DesiredStatus == state.AllocDesiredStatusRun {
				a.logger.Warn("allocation outside its version's slots, stopping it", "alloc_id", al.ID, "job_id", al.JobID)
				a.stopAsync(e)
			}
		default:
			cur[k] = e
		}
	}
	return cur, old
}

// createMissing records, in one commit, an allocation for every slot of the
// current version that has none, and starts them. After a crash-free
// submission there is none to create; it is what makes a job whose
// allocation record was lost, or whose runner could not be restored, whole
// again.
func (a *Agent) createMissing(js *state.JobState, cur map[giKey]*allocEntry) error {
	var runners []*taskrunner.AllocRunner
	err := a.db.Update(func(tx *state.Tx) error {
		runners = nil
		for _, g := range js.Spec.Job.TaskGroups {
			for i := 0; i < g.Count; i++ {
				if cur[giKey{g.Name, i}] != nil {
					continue
				}
				ar, err := taskrunner.PrepareAlloc(a.runnerCfg, js.Spec.Job, js.Job.Version, g.Name, i)
				if err != nil {
					return fmt.Errorf("allocation %s[%d]: %w", g.Name, i, err)
				}
				if err := ar.Record(tx); err != nil {
					return err
				}
				runners = append(runners, ar)
			}
		}
		if len(runners) == 0 {
			return errNothingToWrite
		}
		return nil
	})
	if errors.Is(err, errNothingToWrite) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating allocations of job %q: %w", js.Job.ID, err)
	}
	for _, ar := range runners {
		ar.Recorded()
		a.track(&allocEntry{runner: ar, jobID: js.Job.ID})
		ar.Run()
	}
	a.logger.Info("allocations created for missing slots", "job_id", js.Job.ID, "version", js.Job.Version, "count", len(runners))
	return nil
}

// errNothingToWrite rolls back a transaction that found nothing to do, so
// that it costs no commit.
var errNothingToWrite = errors.New("nothing to write")

// jobAllocsOfVersion returns the job's allocations of one version that
// should run.
func (a *Agent) jobAllocsOfVersion(jobID string, version uint64) []*allocEntry {
	var out []*allocEntry
	for _, e := range a.jobAllocs(jobID) {
		al := e.runner.State().Alloc
		if al.JobVersion == version && al.DesiredStatus == state.AllocDesiredStatusRun {
			out = append(out, e)
		}
	}
	return out
}

// stopAsync stops an allocation in the background, once: Stop records the
// desired status first, so a crash before it is taken is repaired by the
// next pass, and after it by the runner's restore.
func (a *Agent) stopAsync(e *allocEntry) {
	a.mu.Lock()
	if e.stopping || e.runner.State().Alloc.DesiredStatus == state.AllocDesiredStatusStop && isDone(e) {
		a.mu.Unlock()
		return
	}
	e.stopping = true
	a.mu.Unlock()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		if err := e.runner.Stop(ctx); err != nil {
			a.logger.Warn("stopping allocation", "alloc_id", e.runner.ID(), "error", err)
		}
		a.notifyChanged()
		a.jobQueue.Add(e.jobID)
	}()
}

// forget destroys allocations that have stopped (records, directories,
// sockets) and stops the others; their stops add the job again when done.
func (a *Agent) forget(jobID string, entries []*allocEntry) error {
	for _, e := range entries {
		if !isDone(e) {
			a.stopAsync(e)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		err := e.runner.Destroy(ctx)
		cancel()
		if err != nil {
			return fmt.Errorf("destroying allocation %s of job %q: %w", e.runner.ID(), jobID, err)
		}
		a.mu.Lock()
		delete(a.allocs, e.runner.ID())
		a.mu.Unlock()
	}
	a.notifyChanged()
	return nil
}

func isDone(e *allocEntry) bool {
	select {
	case <-e.runner.Done():
		return true
	default:
		return false
	}
}

func allDone(entries []*allocEntry) bool {
	for _, e := range entries {
		if !isDone(e) {
			return false
		}
	}
	return true
}
