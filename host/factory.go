package host

import (
	"errors"
	"fmt"
	"time"

	"github.com/pluginhost/pluginhost/csi/volumes"
	"github.com/pluginhost/pluginhost/host/apiserver"
	"github.com/pluginhost/pluginhost/host/claimhook"
	"github.com/pluginhost/pluginhost/host/jobs"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// allocFactory is the job reconciler's runner factory: it records new
// allocations in the state store, a submission's together with the job's
// new version and their volume claims, in one commit.
type allocFactory struct {
	db      *state.DB
	volumes *volumes.VolumeManager
	runners *taskrunner.Config
	// jobOf names the job of a tracked allocation, for the claim check.
	jobOf func(allocID string) string
}

// Submit implements jobs.Factory. Claims are checked first (RunJob checked
// them already, but a revert submits without RunJob); the new
// allocations' claims commit with them, the volume records' locks taken
// first, as every writer of a volume record does before the store's.
func (f *allocFactory) Submit(job *jobspec.Job, serving *uint64) (*state.SubmitResult, []jobs.Runner, error) {
	if err := claimhook.Check(f.volumes, job, func(id string) bool { return f.jobOf(id) == job.ID }); err != nil {
		return nil, nil, &apiserver.FieldError{Field: "Job.TaskGroups.Volumes", Err: err}
	}
	var (
		res     *state.SubmitResult
		runners []*taskrunner.AllocRunner
	)
	claims := f.volumes.BeginClaims(claimhook.VolumeIDs(job))
	err := f.db.Update(func(tx *state.Tx) error {
		var err error
		runners = nil
		res, err = tx.SubmitJob(job, time.Now())
		if err != nil || !res.Changed {
			return err
		}
		if serving != nil {
			res.Job.Serving = serving
			if err := tx.PutJob(res.Job); err != nil {
				return err
			}
		}
		var slots []jobs.Slot
		for _, g := range job.TaskGroups {
			for i := 0; i < g.Count; i++ {
				slots = append(slots, jobs.Slot{Group: g.Name, Index: i})
			}
		}
		if err := f.record(tx, job, res.Job.Version, slots, &runners); err != nil {
			return err
		}
		allocs := make([]*state.Alloc, len(runners))
		for i, ar := range runners {
			allocs[i] = &ar.State().Alloc
		}
		return claimhook.ClaimAllocs(tx, claims, job, allocs)
	})
	claims.End(err == nil)
	if err != nil {
		discard(runners)
		return nil, nil, fmt.Errorf("recording job %q: %w", job.ID, err)
	}
	return res, recorded(runners), nil
}

// Create implements jobs.Factory: the allocations of slots the current
// version has none for (a record lost, a runner not restored). Their
// claims are made by their volume hook.
func (f *allocFactory) Create(job *jobspec.Job, version uint64, slots []jobs.Slot) ([]jobs.Runner, error) {
	var runners []*taskrunner.AllocRunner
	err := f.db.Update(func(tx *state.Tx) error {
		runners = nil
		err := f.record(tx, job, version, slots, &runners)
		if err == nil && len(runners) == 0 {
			return errNothingToWrite
		}
		return err
	})
	if errors.Is(err, errNothingToWrite) {
		return nil, nil
	}
	if err != nil {
		discard(runners)
		return nil, err
	}
	return recorded(runners), nil
}

// errNothingToWrite rolls back a transaction that found nothing to do, so
// that it costs no commit.
var errNothingToWrite = errors.New("nothing to write")

// record prepares and writes the allocations of slots, appending each
// prepared runner to out, also when a later one fails: the caller
// discards them all if the transaction does not commit.
func (f *allocFactory) record(tx *state.Tx, job *jobspec.Job, version uint64, slots []jobs.Slot, out *[]*taskrunner.AllocRunner) error {
	for _, s := range slots {
		ar, err := taskrunner.PrepareAlloc(f.runners, job, version, s.Group, s.Index)
		if err != nil {
			return fmt.Errorf("allocation %s[%d]: %w", s.Group, s.Index, err)
		}
		*out = append(*out, ar)
		if err := ar.Record(tx); err != nil {
			return fmt.Errorf("allocation %s[%d]: %w", s.Group, s.Index, err)
		}
	}
	return nil
}

// discard gives back what prepared allocations that were never recorded
// hold.
func discard(runners []*taskrunner.AllocRunner) {
	for _, ar := range runners {
		ar.Discard()
	}
}

// recorded tells each runner its transaction committed.
func recorded(runners []*taskrunner.AllocRunner) []jobs.Runner {
	out := make([]jobs.Runner, len(runners))
	for i, ar := range runners {
		ar.Recorded()
		out[i] = ar
	}
	return out
}
