package state

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/host/jobspec"
	"go.etcd.io/bbolt"
)

// jobRev is testJob with a revision in its meta: revisions differ as specs.
func jobRev(id string, rev int) *jobspec.Job {
	j := testJob()
	j.ID, j.Name = id, id
	j.Meta["rev"] = fmt.Sprint(rev)
	return j
}

func submit(t *testing.T, db *DB, job *jobspec.Job, now time.Time) *SubmitResult {
	t.Helper()
	var res *SubmitResult
	if err := db.Update(func(tx *Tx) error {
		var err error
		res, err = tx.SubmitJob(job, now)
		return err
	}); err != nil {
		t.Fatalf("SubmitJob(%s): %v", job.ID, err)
	}
	return res
}

func mustJob(t *testing.T, db *DB, id string) *JobState {
	t.Helper()
	js, err := db.Job(id)
	if err != nil {
		t.Fatalf("Job(%s): %v", id, err)
	}
	return js
}

// rawBucket is every key and value under the bucket at path, nested
// buckets included, so a test can tell that nothing at all was written.
func rawBucket(t *testing.T, db *DB, path ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(prefix string, b *bbolt.Bucket)
	walk = func(prefix string, b *bbolt.Bucket) {
		_ = b.ForEach(func(k, v []byte) error {
			if v == nil {
				walk(prefix+string(k)+"/", b.Bucket(k))
			} else {
				out[prefix+string(k)] = string(v)
			}
			return nil
		})
	}
	if err := db.view("raw", func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(path[0]))
		for _, p := range path[1:] {
			if b = b.Bucket([]byte(p)); b == nil {
				return nil
			}
		}
		walk("", b)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func versionsOf(t *testing.T, db *DB, id string) []uint64 {
	t.Helper()
	vs, err := db.JobVersions(id)
	if err != nil {
		t.Fatalf("JobVersions(%s): %v", id, err)
	}
	out := make([]uint64, len(vs))
	for i, v := range vs {
		if v.Job == nil || v.Job.Meta["rev"] == "" {
			t.Fatalf("version %d has no spec: %+v", v.Version, v)
		}
		out[i] = v.Version
	}
	return out
}

func TestSubmitJobVersions(t *testing.T) {
	db := openTest(t, statePath(t), Options{})

	res := submit(t, db, jobRev("web", 0), t0)
	if !res.Changed || res.Job.Version != 0 || res.Job.Stop || !res.Job.SubmitTime.Equal(t0) {
		t.Fatalf("first submission: %+v", res.Job)
	}
	js := mustJob(t, db, "web")
	if js.Job.Version != 0 || js.Spec.Version != 0 || !jobspec.Equal(js.Spec.Job, jobRev("web", 0)) {
		t.Fatalf("after first submission: %+v %+v", js.Job, js.Spec)
	}

	// Equal by jobspec.Equal (the file moved, the job did not): nothing is
	// written at all.
	before := rawBucket(t, db, bucketJobs)
	same := jobRev("web", 0)
	same.SourcePath = "/elsewhere.hcl"
	res = submit(t, db, same, t0.Add(time.Minute))
	if res.Changed || res.Job.Version != 0 || !res.Job.ModifyTime.Equal(t0) {
		t.Fatalf("equal submission: changed=%v %+v", res.Changed, res.Job)
	}
	if after := rawBucket(t, db, bucketJobs); !reflect.DeepEqual(before, after) {
		t.Fatalf("equal submission wrote to the jobs bucket")
	}

	res = submit(t, db, jobRev("web", 1), t0.Add(2*time.Minute))
	if !res.Changed || res.Job.Version != 1 || !res.Job.SubmitTime.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("changed submission: %+v", res.Job)
	}
	if js := mustJob(t, db, "web"); js.Job.Version != 1 || js.Spec.Job.Meta["rev"] != "1" {
		t.Fatalf("after change: %+v %+v", js.Job, js.Spec)
	}

	// Stopped (and to be purged): submitting the same spec again is a new
	// version that runs.
	if err := db.Update(func(tx *Tx) error {
		js, err := tx.Job("web")
		if err != nil {
			return err
		}
		js.Job.Stop, js.Job.Purge = true, true
		return tx.PutJob(js.Job)
	}); err != nil {
		t.Fatal(err)
	}
	if js := mustJob(t, db, "web"); !js.Job.Stop || js.Job.Version != 1 {
		t.Fatalf("after stop: %+v", js.Job)
	}
	res = submit(t, db, jobRev("web", 1), t0.Add(3*time.Minute))
	if !res.Changed || res.Job.Version != 2 || res.Job.Stop || res.Job.Purge {
		t.Fatalf("submission after stop: changed=%v %+v", res.Changed, res.Job)
	}
	if js := mustJob(t, db, "web"); js.Job.Version != 2 || js.Job.Stop || js.Job.Purge {
		t.Fatalf("after resubmission: %+v", js.Job)
	}
	if got := versionsOf(t, db, "web"); !reflect.DeepEqual(got, []uint64{2, 1, 0}) {
		t.Fatalf("JobVersions = %v, want [2 1 0]", got)
	}
}

func TestSubmitJobCommitsWithAllocs(t *testing.T) {
	db := openTest(t, statePath(t), Options{})
	alloc := func(id string, job *jobspec.Job, v uint64) *Alloc {
		a := testAlloc(id)
		a.JobID, a.Job, a.JobVersion = job.ID, job, v
		return a
	}

	if err := db.Update(func(tx *Tx) error {
		res, err := tx.SubmitJob(jobRev("web", 0), t0)
		if err != nil {
			return err
		}
		for _, id := range []string{"a0", "a1"} {
			if err := tx.PutAlloc(alloc(id, jobRev("web", 0), res.Job.Version)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	allocs, err := db.Allocs()
	if err != nil || len(allocs) != 2 || allocs[0].JobVersion != 0 {
		t.Fatalf("allocations of the first submission: %v %+v", err, allocs)
	}

	// An update that replaces the allocations, then fails: none of it stays.
	jobsBefore, allocsBefore := rawBucket(t, db, bucketJobs), rawBucket(t, db, bucketAllocs)
	errLate := errors.New("late failure")
	err = db.Update(func(tx *Tx) error {
		res, err := tx.SubmitJob(jobRev("web", 1), t0.Add(time.Minute))
		if err != nil || !res.Changed || res.Job.Version != 1 {
			return fmt.Errorf("submit in tx: %v %+v", err, res)
		}
		// The transaction sees its own submission.
		if js, err := tx.Job("web"); err != nil || js.Job.Version != 1 {
			return fmt.Errorf("job in tx: %v", err)
		}
		if err := tx.DeleteAlloc("a0"); err != nil {
			return err
		}
		if err := tx.PutAlloc(alloc("b0", jobRev("web", 1), 1)); err != nil {
			return err
		}
		return errLate
	})
	if !errors.Is(err, errLate) {
		t.Fatalf("Update = %v, want the function's error", err)
	}
	if !reflect.DeepEqual(rawBucket(t, db, bucketJobs), jobsBefore) || !reflect.DeepEqual(rawBucket(t, db, bucketAllocs), allocsBefore) {
		t.Fatal("a failed update kept part of the submission")
	}
	if js := mustJob(t, db, "web"); js.Job.Version != 0 {
		t.Fatalf("after failed update: %+v", js.Job)
	}

	// The same update, succeeding, commits all of it.
	if err := db.Update(func(tx *Tx) error {
		if _, err := tx.SubmitJob(jobRev("web", 1), t0.Add(time.Minute)); err != nil {
			return err
		}
		if err := tx.DeleteAlloc("a0"); err != nil {
			return err
		}
		return tx.PutAlloc(alloc("b0", jobRev("web", 1), 1))
	}); err != nil {
		t.Fatal(err)
	}
	allocs, err = db.Allocs()
	if err != nil || len(allocs) != 2 || allocs[0].ID != "a1" || allocs[1].ID != "b0" || allocs[1].JobVersion != 1 {
		t.Fatalf("allocations after update: %v %+v", err, allocs)
	}
	if js := mustJob(t, db, "web"); js.Job.Version != 1 {
		t.Fatalf("after update: %+v", js.Job)
	}
}

func TestJobVersionsKeepsLast(t *testing.T) {
	db := openTest(t, statePath(t), Options{})
	for rev := range 10 {
		submit(t, db, jobRev("web", rev), t0.Add(time.Duration(rev)*time.Minute))
	}
	if got, want := versionsOf(t, db, "web"), []uint64{9, 8, 7, 6, 5, 4}; !reflect.DeepEqual(got, want) {
		t.Fatalf("one submission per commit: JobVersions = %v, want %v", got, want)
	}
	vs, _ := db.JobVersions("web")
	for _, v := range vs {
		if v.Job.Meta["rev"] != fmt.Sprint(v.Version) || !v.SubmitTime.Equal(t0.Add(time.Duration(v.Version)*time.Minute)) {
			t.Fatalf("version %d holds rev %s submitted %v", v.Version, v.Job.Meta["rev"], v.SubmitTime)
		}
	}
	if js := mustJob(t, db, "web"); js.Job.Version != 9 || js.Spec.Job.Meta["rev"] != "9" {
		t.Fatalf("current: %+v", js.Job)
	}

	// Several submissions in one commit are trimmed the same way.
	if err := db.Update(func(tx *Tx) error {
		for rev := range 10 {
			if _, err := tx.SubmitJob(jobRev("batch", rev), t0); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got, want := versionsOf(t, db, "batch"), []uint64{9, 8, 7, 6, 5, 4}; !reflect.DeepEqual(got, want) {
		t.Fatalf("submissions in one commit: JobVersions = %v, want %v", got, want)
	}
}

func TestJobsAndDelete(t *testing.T) {
	db := openTest(t, statePath(t), Options{})
	for _, id := range []string{"c", "a", "b"} {
		submit(t, db, jobRev(id, 0), t0)
	}
	jobs, err := db.Jobs()
	if err != nil || len(jobs) != 3 || jobs[0].Job.ID != "a" || jobs[2].Job.ID != "c" || jobs[1].Spec.Job.ID != "b" {
		t.Fatalf("Jobs = %v, %+v", err, jobs)
	}
	if err := db.Update(func(tx *Tx) error {
		if err := tx.DeleteJob("b"); err != nil {
			return err
		}
		return tx.DeleteJob("never-was")
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Job("b"); !errors.Is(err, ErrJobNotFound) {
		t.Fatalf("deleted job: %v", err)
	}
	if _, err := db.JobVersions("b"); !errors.Is(err, ErrJobNotFound) {
		t.Fatalf("versions of deleted job: %v", err)
	}
	if err := db.Update(func(tx *Tx) error { return tx.PutJob(&Job{ID: "b"}) }); !errors.Is(err, ErrJobNotFound) {
		t.Fatalf("PutJob of a deleted job = %v, want ErrJobNotFound", err)
	}
	// A deleted job submitted again starts over.
	if res := submit(t, db, jobRev("b", 5), t0); res.Job.Version != 0 || !res.Changed {
		t.Fatalf("resubmitted deleted job: %+v", res.Job)
	}
	if err := db.Update(func(tx *Tx) error {
		_, err := tx.SubmitJob(&jobspec.Job{}, t0)
		return err
	}); err == nil {
		t.Fatal("SubmitJob without an ID succeeded")
	}
}

func TestCorruptJobRecord(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(jb *bbolt.Bucket) error
	}{
		{"current version missing", func(jb *bbolt.Bucket) error {
			return putJSON(jb, []byte(keyJob), &Job{ID: "web", Version: 3})
		}},
		{"versions bucket gone", func(jb *bbolt.Bucket) error {
			return jb.DeleteBucket([]byte(bucketVersions))
		}},
		{"record of another job", func(jb *bbolt.Bucket) error {
			return putJSON(jb, []byte(keyJob), &Job{ID: "other"})
		}},
		{"no record", func(jb *bbolt.Bucket) error {
			return jb.Delete([]byte(keyJob))
		}},
		{"undecodable record", func(jb *bbolt.Bucket) error {
			return jb.Put([]byte(keyJob), []byte("{"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openTest(t, statePath(t), Options{})
			submit(t, db, jobRev("web", 0), t0)
			submit(t, db, jobRev("fine", 0), t0)
			if err := db.update("break", func(tx *bbolt.Tx) error {
				return tc.break_(tx.Bucket([]byte(bucketJobs)).Bucket([]byte("web")))
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Job("web"); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Job = %v, want ErrCorrupt", err)
			}
			if jobs, err := db.Jobs(); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Jobs = %v, %d jobs, want ErrCorrupt", err, len(jobs))
			}
			if _, err := db.Job("fine"); err != nil {
				t.Errorf("the other job: %v", err)
			}
		})
	}
}

// TestMigrateJobRecords writes a schema-1 file (an empty migration list
// makes a writer of version 1) holding allocations only, and opens it with
// this binary's migrations.
func TestMigrateJobRecords(t *testing.T) {
	path := statePath(t)
	specA0, specA1, specB := jobRev("a", 0), jobRev("a", 1), jobRev("b", 0)
	alloc := func(id string, job *jobspec.Job, created time.Duration, desired string) *Alloc {
		a := testAlloc(id)
		a.JobID, a.Job, a.DesiredStatus, a.CreateTime = job.ID, job, desired, t0.Add(created)
		return a
	}
	withDB(t, path, Options{migrations: []migration{}}, func(db *DB) {
		if v := db.schemaVersion(); v != 1 {
			t.Fatalf("writer schema version %d, want 1", v)
		}
		// IDs sort against creation order: versions follow creation time.
		for _, a := range []*Alloc{
			alloc("a-3", specA0, 0, AllocDesiredStatusStop),
			alloc("a-2", specA0, time.Minute, AllocDesiredStatusStop),
			alloc("a-1", specA1, 2*time.Minute, AllocDesiredStatusRun),
			alloc("b-1", specB, 0, AllocDesiredStatusStop),
			alloc("b-2", specB, time.Minute, AllocDesiredStatusStop),
		} {
			if err := db.PutAlloc(a); err != nil {
				t.Fatal(err)
			}
		}
	})

	db := openTest(t, path, Options{})
	if v := db.schemaVersion(); v != 2 {
		t.Fatalf("schema version %d after upgrade, want 2", v)
	}
	a := mustJob(t, db, "a")
	if a.Job.Version != 1 || a.Job.Stop || !jobspec.Equal(a.Spec.Job, specA1) || !a.Job.SubmitTime.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("job a: %+v, spec rev %s", a.Job, a.Spec.Job.Meta["rev"])
	}
	vs, err := db.JobVersions("a")
	if err != nil || len(vs) != 2 || !jobspec.Equal(vs[1].Job, specA0) || vs[1].Version != 0 {
		t.Fatalf("versions of a: %v %+v", err, vs)
	}
	b := mustJob(t, db, "b")
	if b.Job.Version != 0 || !b.Job.Stop || !jobspec.Equal(b.Spec.Job, specB) {
		t.Fatalf("job b: %+v", b.Job)
	}
	allocs, err := db.Allocs()
	if err != nil {
		t.Fatal(err)
	}
	wantVersion := map[string]uint64{"a-1": 1, "a-2": 0, "a-3": 0, "b-1": 0, "b-2": 0}
	for _, al := range allocs {
		if al.JobVersion != wantVersion[al.ID] {
			t.Errorf("alloc %s: JobVersion %d, want %d", al.ID, al.JobVersion, wantVersion[al.ID])
		}
	}
	if len(allocs) != len(wantVersion) {
		t.Errorf("%d allocations after upgrade, want %d", len(allocs), len(wantVersion))
	}
	backup := BackupPath(path, 1)
	if _, err := os.Stat(backup); err != nil {
		t.Fatalf("no backup before upgrade: %v", err)
	}

	// Reopening runs nothing again: a record changed since survives, and no
	// backup is taken.
	if err := db.Update(func(tx *Tx) error {
		rec := *a.Job
		rec.Stop = true
		return tx.PutJob(&rec)
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(backup); err != nil {
		t.Fatal(err)
	}
	withDB(t, path, Options{}, func(db *DB) {
		if a := mustJob(t, db, "a"); !a.Job.Stop || a.Job.Version != 1 {
			t.Errorf("job a after reopening: %+v", a.Job)
		}
	})
	if _, err := os.Stat(backup); !os.IsNotExist(err) {
		t.Errorf("reopening an upgraded file backed it up again: %v", err)
	}
}

// TestMigrateManySpecChanges: a schema-1 job whose allocations went through
// more specs than MaxJobVersions keeps only the last ones, as a submission
// would.
func TestMigrateManySpecChanges(t *testing.T) {
	path := statePath(t)
	withDB(t, path, Options{migrations: []migration{}}, func(db *DB) {
		for rev := range 9 {
			a := testAlloc(fmt.Sprintf("a-%d", rev))
			a.JobID, a.Job, a.CreateTime = "a", jobRev("a", rev), t0.Add(time.Duration(rev)*time.Minute)
			if err := db.PutAlloc(a); err != nil {
				t.Fatal(err)
			}
		}
	})
	db := openTest(t, path, Options{})
	if got, want := versionsOf(t, db, "a"), []uint64{8, 7, 6, 5, 4, 3}; !reflect.DeepEqual(got, want) {
		t.Fatalf("JobVersions after migration = %v, want %v", got, want)
	}
	if a := mustJob(t, db, "a"); a.Job.Version != 8 || a.Job.Stop {
		t.Fatalf("job a: %+v", a.Job)
	}
}

// TestStableVersions: a successful outcome and MarkStable both move
// LastStable forward, never back; MarkStable marks the kept version stable
// and leaves the latest outcome alone.
func TestStableVersions(t *testing.T) {
	db := openTest(t, statePath(t), Options{})
	for v := range 3 {
		submit(t, db, jobRev("web", v), t0.Add(time.Duration(v)*time.Minute))
	}
	if _, ok := mustJob(t, db, "web").Job.StableVersion(); ok {
		t.Fatal("a stable version before any roll-out succeeded")
	}
	if err := db.MarkStable("web", 1); err != nil {
		t.Fatal(err)
	}
	js := mustJob(t, db, "web")
	if v, ok := js.Job.StableVersion(); !ok || v != 1 || js.Job.Update != nil {
		t.Fatalf("after MarkStable(1): stable %d %v, update %+v", v, ok, js.Job.Update)
	}
	versions, err := db.JobVersions("web")
	if err != nil {
		t.Fatal(err)
	}
	for _, jv := range versions {
		if jv.Stable != (jv.Version == 1) {
			t.Errorf("version %d stable = %v", jv.Version, jv.Stable)
		}
	}
	if err := db.MarkStable("web", 0); err != nil {
		t.Fatal(err)
	}
	if v, _ := mustJob(t, db, "web").Job.StableVersion(); v != 1 {
		t.Fatalf("MarkStable(0) moved LastStable back to %d", v)
	}
	if err := db.FinishUpdate("web", &UpdateOutcome{Version: 2, Status: UpdateSuccessful, Time: t0}); err != nil {
		t.Fatal(err)
	}
	if v, _ := mustJob(t, db, "web").Job.StableVersion(); v != 2 {
		t.Fatalf("after version 2 succeeded: LastStable %d", v)
	}
}

// TestServingBelongsToOneVersion: the serving version a submitter records
// survives a reopen, and the next version starts without one: it is said
// anew for each update.
func TestServingBelongsToOneVersion(t *testing.T) {
	path := statePath(t)
	db := openTest(t, path, Options{})
	submit(t, db, jobRev("web", 0), t0)
	err := db.Update(func(tx *Tx) error {
		res, err := tx.SubmitJob(jobRev("web", 1), t0.Add(time.Minute))
		if err != nil {
			return err
		}
		v := uint64(0)
		res.Job.Serving = &v
		return tx.PutJob(res.Job)
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = openTest(t, path, Options{})
	if js := mustJob(t, db, "web"); js.Job.Version != 1 || js.Job.Serving == nil || *js.Job.Serving != 0 {
		t.Fatalf("after reopening: %+v", js.Job)
	}
	submit(t, db, jobRev("web", 2), t0.Add(2*time.Minute))
	if js := mustJob(t, db, "web"); js.Job.Serving != nil {
		t.Fatalf("version 2 inherited version 1's serving version: %+v", js.Job)
	}
}
