package state

import (
	"cmp"
	"maps"
	"slices"

	"github.com/pluginhost/pluginhost/host/jobspec"
	"go.etcd.io/bbolt"
)

// migrateJobRecords (schema 1 → 2) gives every job a durable record. Schema 1
// had none: a job existed while it had allocations, each carrying its copy
// of the job. The record is rebuilt from those copies: in creation order,
// every change of spec is a new version, the newest is the one that should
// run, and the job is stopped if none of its allocations should run.
func migrateJobRecords(tx *bbolt.Tx) error {
	jobs, err := tx.CreateBucketIfNotExists([]byte(bucketJobs))
	if err != nil {
		return err
	}
	byJob := map[string][]*Alloc{}
	if err := eachAlloc(tx, func(id []byte, b *bbolt.Bucket) error {
		a, err := readAlloc(id, b)
		if err != nil {
			return err
		}
		if a.Job == nil {
			// Never written by an agent; the restore refuses it on its
			// own, and it has no job to give a record to.
			return nil
		}
		byJob[a.JobID] = append(byJob[a.JobID], a)
		return nil
	}); err != nil {
		return err
	}
	t := &Tx{tx: tx}
	for _, jobID := range slices.Sorted(maps.Keys(byJob)) {
		if jobs.Bucket([]byte(jobID)) != nil {
			continue
		}
		allocs := byJob[jobID]
		slices.SortStableFunc(allocs, func(x, y *Alloc) int {
			return cmp.Or(x.CreateTime.Compare(y.CreateTime), cmp.Compare(x.ID, y.ID))
		})
		var (
			rec  *Job
			spec *jobspec.Job
			stop = true
		)
		for _, a := range allocs {
			if rec == nil || !jobspec.Equal(spec, a.Job) {
				if rec == nil {
					rec = &Job{ID: jobID}
				} else {
					rec.Version++
				}
				spec = a.Job
				rec.SubmitTime, rec.ModifyTime = a.CreateTime, a.CreateTime
				if err := t.putJobVersion(rec, spec); err != nil {
					return err
				}
			}
			a.JobVersion = rec.Version
			if a.DesiredStatus != AllocDesiredStatusStop {
				stop = false
			}
			if err := t.putAlloc(a); err != nil {
				return err
			}
		}
		rec.Stop = stop
		if err := t.PutJob(rec); err != nil {
			return err
		}
	}
	return nil
}
