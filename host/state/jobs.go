package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/pluginhost/pluginhost/host/jobspec"
	"go.etcd.io/bbolt"
)

// Job layout, under the top-level "jobs" bucket:
//
//	jobs/<job id>/
//	    job                  Job (JSON): the desired state
//	    versions/<u64 BE>    JobVersion (JSON), the last MaxJobVersions
//
// The job record is the agent's desired state for a job: which version
// should run and whether the job is stopped. Allocations say what was
// started for it (Alloc.JobVersion); the job reconciler (package host/jobs)
// moves the second towards the first, at submission and at every start.
const (
	bucketJobs     = "jobs"
	keyJob         = "job"
	bucketVersions = "versions"

	// MaxJobVersions is how many versions of a job are kept for `job
	// history` and `job revert`, as Nomad's default job_tracked_versions.
	MaxJobVersions = 6
)

// ErrJobNotFound: no record of the job.
var ErrJobNotFound = errors.New("job not found in state")

// Job is a job's durable desired state.
type Job struct {
	ID string
	// Version is the version that should run.
	Version uint64
	// Stop: no allocation of the job should run.
	Stop bool
	// Purge: once every allocation has stopped, forget the job and its
	// allocations. Implies Stop.
	Purge bool
	// SubmitTime is when Version was submitted; ModifyTime when the record
	// last changed.
	SubmitTime time.Time
	ModifyTime time.Time
	// Update is the outcome of rolling out the latest version whose
	// rollout finished (nil while none has).
	Update *UpdateOutcome `json:",omitempty"`
	// LastStable is the newest version whose roll-out succeeded (nil
	// while none has). It is kept here, not only as JobVersion.Stable,
	// because a rollout is bounded by it (the last healthy version keeps
	// serving, a newer unhealthy one is stopped once superseded) and
	// rapid updates drop old versions out of the kept history.
	LastStable *uint64 `json:",omitempty"`
	// Serving is the version whose allocations were all healthy when
	// Version was submitted, though maybe not yet for min_healthy_time
	// (nil if none was). Like LastStable it keeps running until Version
	// is healthy or has failed: an update that arrives early must not
	// take down what serves (a plugin updated 5 s after it registered).
	Serving *uint64 `json:",omitempty"`
}

// StableVersion is the newest version whose roll-out succeeded, as far as
// the record tells: LastStable, or for a record written before it existed
// the latest outcome if that succeeded.
func (j *Job) StableVersion() (uint64, bool) {
	switch {
	case j.LastStable != nil:
		return *j.LastStable, true
	case j.Update != nil && j.Update.Status == UpdateSuccessful:
		return j.Update.Version, true
	}
	return 0, false
}

// Update statuses, as Nomad's deployment statuses.
const (
	UpdateSuccessful = "successful"
	UpdateFailed     = "failed"
)

// UpdateOutcome is how the roll-out of one version ended.
type UpdateOutcome struct {
	Version     uint64
	Status      string
	Description string
	Time        time.Time
}

// Failed reports whether the roll-out of version v failed.
func (j *Job) Failed(v uint64) bool {
	return j.Update != nil && j.Update.Version == v && j.Update.Status == UpdateFailed
}

// JobVersion is one accepted submission of a job.
type JobVersion struct {
	Version    uint64
	Job        *jobspec.Job
	SubmitTime time.Time
	// Stable: this version's roll-out succeeded (auto_revert goes back to
	// the newest stable version).
	Stable bool `json:",omitempty"`
}

// JobState is a job's record with its current version's spec.
type JobState struct {
	Job  *Job
	Spec *JobVersion
}

// SubmitResult says what a submission did.
type SubmitResult struct {
	Job *Job
	// Changed is false when the submitted job equals the current version of
	// a job that is not stopped: nothing was written.
	Changed bool
}

// SubmitJob records job as the next version of its job (the first, 0, for
// an unknown job) and makes it the one that should run, unless it equals
// the current version of a job that is not stopped (jobspec.Equal). The
// version, the record and whatever else the caller writes in tx
// (the new version's allocations) commit together or not at all.
func (t *Tx) SubmitJob(job *jobspec.Job, now time.Time) (*SubmitResult, error) {
	if job == nil {
		return nil, errors.New("submit job: nil job")
	}
	if err := checkName("job ID", job.ID); err != nil {
		return nil, fmt.Errorf("submit job: %w", err)
	}
	cur, err := t.Job(job.ID)
	switch {
	case errors.Is(err, ErrJobNotFound):
		rec := &Job{ID: job.ID, Version: 0, SubmitTime: now, ModifyTime: now}
		return &SubmitResult{Job: rec, Changed: true}, t.putJobVersion(rec, job)
	case err != nil:
		return nil, err
	}
	// The same spec again is a change after a stop, and after a failed
	// roll-out: re-submitting is how a user retries it.
	if !cur.Job.Stop && !cur.Job.Failed(cur.Job.Version) && cur.Spec != nil && jobspec.Equal(cur.Spec.Job, job) {
		return &SubmitResult{Job: cur.Job, Changed: false}, nil
	}
	rec := *cur.Job
	rec.Version++
	rec.Stop, rec.Purge = false, false
	rec.Serving = nil // the submitter's to say, for this version
	rec.SubmitTime, rec.ModifyTime = now, now
	return &SubmitResult{Job: &rec, Changed: true}, t.putJobVersion(&rec, job)
}

// putJobVersion writes rec and the spec of its version, and drops versions
// beyond the last MaxJobVersions.
func (t *Tx) putJobVersion(rec *Job, job *jobspec.Job) error {
	jb, err := t.tx.Bucket([]byte(bucketJobs)).CreateBucketIfNotExists([]byte(rec.ID))
	if err != nil {
		return fmt.Errorf("job %s: %w", rec.ID, err)
	}
	vb, err := jb.CreateBucketIfNotExists([]byte(bucketVersions))
	if err != nil {
		return fmt.Errorf("job %s: %w", rec.ID, err)
	}
	if err := putJSON(vb, seqKey(rec.Version), &JobVersion{Version: rec.Version, Job: job, SubmitTime: rec.SubmitTime}); err != nil {
		return fmt.Errorf("job %s version %d: %w", rec.ID, rec.Version, err)
	}
	// Versions only grow, so the ones to drop are the first keys. Counting
	// keys with Bucket.Stats would not do: it reads committed pages and
	// misses what this transaction wrote.
	if rec.Version >= MaxJobVersions {
		last := rec.Version - MaxJobVersions
		c := vb.Cursor()
		for k, _ := c.First(); k != nil && len(k) == 8 && binary.BigEndian.Uint64(k) <= last; k, _ = c.First() {
			if err := c.Delete(); err != nil {
				return fmt.Errorf("job %s: drop old version: %w", rec.ID, err)
			}
		}
	}
	return putJSON(jb, []byte(keyJob), rec)
}

// PutJob replaces a job's record (its versions stay). The job must exist.
func (t *Tx) PutJob(rec *Job) error {
	if rec == nil {
		return errors.New("put job: nil record")
	}
	jb := t.tx.Bucket([]byte(bucketJobs)).Bucket([]byte(rec.ID))
	if jb == nil {
		return fmt.Errorf("put job %s: %w", rec.ID, ErrJobNotFound)
	}
	return putJSON(jb, []byte(keyJob), rec)
}

// FinishUpdate records how the roll-out of the job's current version ended,
// and marks that version stable when it succeeded.
func (t *Tx) FinishUpdate(id string, out *UpdateOutcome) error {
	js, err := t.Job(id)
	if err != nil {
		return err
	}
	rec := *js.Job
	rec.Update = out
	rec.ModifyTime = out.Time
	if out.Status == UpdateSuccessful {
		v := out.Version
		rec.LastStable = &v
	}
	if out.Status == UpdateSuccessful && out.Version == js.Spec.Version {
		v := *js.Spec
		v.Stable = true
		vb := t.tx.Bucket([]byte(bucketJobs)).Bucket([]byte(id)).Bucket([]byte(bucketVersions))
		if err := putJSON(vb, seqKey(v.Version), &v); err != nil {
			return fmt.Errorf("job %s version %d: %w", id, v.Version, err)
		}
	}
	return t.PutJob(&rec)
}

// MarkStable records that an earlier version v was healthy although no
// roll-out outcome says so (a newer version was submitted before the pass
// that would have judged it): it becomes LastStable, unless a newer one
// is, and its kept version record is marked stable. The latest outcome is
// left alone: it is about the current version.
func (t *Tx) MarkStable(id string, v uint64) error {
	js, err := t.Job(id)
	if err != nil {
		return err
	}
	if js.Job.LastStable != nil && *js.Job.LastStable >= v {
		return nil
	}
	rec := *js.Job
	rec.LastStable = &v
	vb := t.tx.Bucket([]byte(bucketJobs)).Bucket([]byte(id)).Bucket([]byte(bucketVersions))
	if vb != nil {
		var jv JobVersion
		found, err := getJSON(vb, seqKey(v), &jv)
		if err != nil {
			return fmt.Errorf("job %s version %d: %w", id, v, err)
		}
		if found && !jv.Stable {
			jv.Stable = true
			if err := putJSON(vb, seqKey(v), &jv); err != nil {
				return fmt.Errorf("job %s version %d: %w", id, v, err)
			}
		}
	}
	return t.PutJob(&rec)
}

// DeleteJob forgets a job and its versions; a missing job is not an error.
func (t *Tx) DeleteJob(id string) error {
	err := t.tx.Bucket([]byte(bucketJobs)).DeleteBucket([]byte(id))
	if err != nil && !errors.Is(err, bbolt.ErrBucketNotFound) {
		return fmt.Errorf("delete job %s: %w", id, err)
	}
	return nil
}

// Job reads a job's record and current version.
func (t *Tx) Job(id string) (*JobState, error) {
	jb := t.tx.Bucket([]byte(bucketJobs)).Bucket([]byte(id))
	if jb == nil {
		return nil, fmt.Errorf("job %s: %w", id, ErrJobNotFound)
	}
	return readJob([]byte(id), jb)
}

// FinishUpdate records how the roll-out of the job's current version ended,
// in a commit of its own (Tx.FinishUpdate).
func (db *DB) FinishUpdate(id string, out *UpdateOutcome) error {
	return db.Update(func(tx *Tx) error { return tx.FinishUpdate(id, out) })
}

// MarkStable records an earlier version as stable in a commit of its own
// (Tx.MarkStable).
func (db *DB) MarkStable(id string, v uint64) error {
	return db.Update(func(tx *Tx) error { return tx.MarkStable(id, v) })
}

// DeleteJob forgets a job and its versions in a commit of its own.
func (db *DB) DeleteJob(id string) error {
	return db.Update(func(tx *Tx) error { return tx.DeleteJob(id) })
}

// Job reads a job's record and current version; ErrJobNotFound if unknown.
func (db *DB) Job(id string) (*JobState, error) {
	var out *JobState
	err := db.view("read job "+id, func(btx *bbolt.Tx) error {
		var err error
		out, err = (&Tx{tx: btx}).Job(id)
		return err
	})
	return out, err
}

// Jobs returns every job's record and current version, ordered by ID.
func (db *DB) Jobs() ([]*JobState, error) {
	var out []*JobState
	err := db.view("list jobs", func(tx *bbolt.Tx) error {
		jobs := tx.Bucket([]byte(bucketJobs))
		return jobs.ForEachBucket(func(id []byte) error {
			js, err := readJob(id, jobs.Bucket(id))
			if err == nil {
				out = append(out, js)
			}
			return err
		})
	})
	return out, err
}

// JobVersions returns a job's kept versions, newest first.
func (db *DB) JobVersions(id string) ([]*JobVersion, error) {
	var out []*JobVersion
	err := db.view("read job versions "+id, func(tx *bbolt.Tx) error {
		jb := tx.Bucket([]byte(bucketJobs)).Bucket([]byte(id))
		if jb == nil {
			return fmt.Errorf("job %s: %w", id, ErrJobNotFound)
		}
		vb := jb.Bucket([]byte(bucketVersions))
		if vb == nil {
			return nil
		}
		return forEachJSON(vb, func(k []byte, v *JobVersion) error {
			out = append(out, v)
			return nil
		})
	})
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, err
}

// readJob decodes a job bucket; a record whose ID disagrees with its bucket,
// or whose current version's spec is missing, is corruption.
func readJob(id []byte, jb *bbolt.Bucket) (*JobState, error) {
	rec := new(Job)
	found, err := getJSON(jb, []byte(keyJob), rec)
	switch {
	case err != nil:
		return nil, fmt.Errorf("job %s: %w", id, err)
	case !found:
		return nil, fmt.Errorf("%w: job bucket %s has no job record", ErrCorrupt, id)
	case rec.ID != string(id):
		return nil, fmt.Errorf("%w: job bucket %s holds the record of job %q", ErrCorrupt, id, rec.ID)
	}
	js := &JobState{Job: rec}
	vb := jb.Bucket([]byte(bucketVersions))
	if vb != nil {
		v := new(JobVersion)
		found, err := getJSON(vb, seqKey(rec.Version), v)
		if err != nil {
			return nil, fmt.Errorf("job %s version %d: %w", id, rec.Version, err)
		}
		if found {
			js.Spec = v
		}
	}
	if js.Spec == nil || js.Spec.Job == nil || js.Spec.Version != rec.Version {
		return nil, fmt.Errorf("%w: job %s has no spec for its version %d", ErrCorrupt, id, rec.Version)
	}
	return js, nil
}

// readAllJobs decodes every job record and every kept version, for the
// check Open makes before it writes anything.
func readAllJobs(tx *bbolt.Tx) error {
	jobs := tx.Bucket([]byte(bucketJobs))
	if jobs == nil {
		return nil
	}
	return jobs.ForEachBucket(func(id []byte) error {
		jb := jobs.Bucket(id)
		if _, err := readJob(id, jb); err != nil {
			return err
		}
		vb := jb.Bucket([]byte(bucketVersions))
		if vb == nil {
			return nil
		}
		return forEachJSON(vb, func(k []byte, v *JobVersion) error {
			if len(k) != 8 || binary.BigEndian.Uint64(k) != v.Version || v.Job == nil || v.Job.ID != string(id) {
				return fmt.Errorf("%w: job %s: version record %x does not hold version %d of this job", ErrCorrupt, id, k, v.Version)
			}
			return nil
		})
	})
}
