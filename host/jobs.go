package host

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/api"
	apiserver "github.com/pluginhost/pluginhost/host/api"
	"github.com/pluginhost/pluginhost/host/cgroup"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// stopTimeout bounds a job stop; kill_timeout is per task and the stops run
// in parallel, so this is generous.
const stopTimeout = 5 * time.Minute

// RunJob records job as the next version of its job, together with every
// allocation of that version, in one commit; then the job's reconciler
// starts them and retires the previous version's (reconcile_jobs.go). An
// unchanged job records nothing, but is still reconciled, so re-submitting
// always converges to the file.
func (a *Agent) RunJob(ctx context.Context, job *jobspec.Job) (*api.JobRegisterResponse, error) {
	if job == nil || job.ID == "" {
		return nil, &apiserver.FieldError{Field: "Job", Err: errors.New("a job with an ID is required")}
	}
	// The API and the job file parser have validated it already; this is
	// for every other caller of the Backend, so that nothing reaches the
	// state store or the task runner's paths unchecked.
	if err := jobspec.Validate(job); err != nil {
		return nil, &apiserver.FieldError{Field: "Job", Err: err}
	}
	if !a.datacenterMatches(job.Datacenters) {
		return nil, &apiserver.FieldError{Field: "Datacenters", Err: fmt.Errorf(
			"this agent is in datacenter %q, the job asks for %s", a.cfg.Datacenter, strings.Join(job.Datacenters, ", "))}
	}
	// Users and capabilities are this machine's: refused now, naming the
	// task and field, rather than as a driver failure after the job is
	// recorded (Nomad finds them only when the task starts).
	if err := jobspec.CheckHost(job, a.cfg.HostPolicy()); err != nil {
		return nil, &apiserver.FieldError{Field: "Job", Err: err}
	}
	resp, err := a.submit(job)
	if err != nil {
		return nil, err
	}
	if err := a.jobQueue.AddAndWait(ctx, job.ID); err != nil {
		// The submission is recorded; the reconciler retries on its own.
		a.logger.Warn("job recorded, first reconcile failed", "job_id", job.ID, "error", err)
	}
	return resp, nil
}

// submit records a new version of job and its allocations in one commit and
// starts their runners. It holds jobMu so the reconciler never sees the new
// version without its allocations' runners.
func (a *Agent) submit(job *jobspec.Job) (*api.JobRegisterResponse, error) {
	a.jobMu.Lock()
	defer a.jobMu.Unlock()
	return a.submitLocked(job)
}

// submitLocked is submit with jobMu held (a reconcile pass reverting).
func (a *Agent) submitLocked(job *jobspec.Job) (*api.JobRegisterResponse, error) {
	if err := a.checkClaims(job); err != nil {
		return nil, err
	}
	resp := &api.JobRegisterResponse{JobID: job.ID}
	var (
		res     *state.SubmitResult
		runners []*taskrunner.AllocRunner
	)
	// The new allocations' volume claims commit with them (see
	// claimAllocs): the volume records' locks are taken first, as every
	// writer of a volume record does before the store's.
	claims := a.volumes.BeginClaims(jobVolumeIDs(job))
	err := a.db.Update(func(tx *state.Tx) error {
		var err error
		runners = nil
		res, err = tx.SubmitJob(job, time.Now())
		if err != nil || !res.Changed {
			return err
		}
		for _, g := range job.TaskGroups {
			for i := 0; i < g.Count; i++ {
				ar, err := taskrunner.PrepareAlloc(a.runnerCfg, job, res.Job.Version, g.Name, i)
				if err != nil {
					return fmt.Errorf("allocation %s[%d]: %w", g.Name, i, err)
				}
				if err := ar.Record(tx); err != nil {
					return fmt.Errorf("allocation %s[%d]: %w", g.Name, i, err)
				}
				runners = append(runners, ar)
			}
		}
		return a.claimAllocs(tx, claims, job, runners)
	})
	claims.End(err == nil)
	if err != nil {
		return nil, fmt.Errorf("recording job %q: %w", job.ID, err)
	}
	resp.Version = res.Job.Version
	resp.Warnings = append(JobWarnings(job), containmentWarnings(a.cgroups)...)
	for _, ar := range runners {
		ar.Recorded()
		a.track(&allocEntry{runner: ar, jobID: job.ID})
		ar.Run()
		resp.AllocIDs = append(resp.AllocIDs, ar.ID())
	}
	if res.Changed {
		a.logger.Info("job version recorded", "job_id", job.ID, "version", res.Job.Version, "allocs", len(runners))
	}
	return resp, nil
}

// JobWarnings are what the agent accepts but runs differently from Nomad,
// said at submission rather than discovered later.
func JobWarnings(job *jobspec.Job) []string {
	out := jobspec.NomadWarnings(job)
	for _, g := range job.TaskGroups {
		if u := g.Update; u != nil && u.MaxParallel > 0 && u.MaxParallel < g.Count {
			out = append(out, fmt.Sprintf("group %q: update.max_parallel = %d is not followed: pluginhost starts all %d new allocations at once and stops the old ones when all are healthy",
				g.Name, u.MaxParallel, g.Count))
		}
	}
	return out
}

// containmentWarnings say, at every job run and validate, that this
// machine cannot enforce a job's resources: the job would behave otherwise
// under Nomad, which kills a task past its memory.
func containmentWarnings(m *cgroup.Manager) []string {
	if m == nil || m.Enabled() {
		return nil
	}
	return []string{"resources are not enforced and a stop kills only each task's process group: cgroups cannot be used on this machine (" + m.Reason() + ")"}
}

// ContainmentWarnings is containmentWarnings for this machine as the CLI
// sees it (job validate runs without an agent).
func ContainmentWarnings() []string {
	return containmentWarnings(cgroup.Detect(hclog.NewNullLogger(), cgroup.Options{}))
}

// JobNotes say where pluginhost does more than Nomad with this job, for
// `job validate`: behaviour a Nomad user would not assume.
func JobNotes(job *jobspec.Job) []string {
	var out []string
	for _, g := range job.TaskGroups {
		for _, t := range g.Tasks {
			for _, vm := range t.VolumeMounts {
				where := vm.Destination
				if !filepath.IsAbs(where) {
					where = "<task dir>/" + where
				}
				out = append(out, fmt.Sprintf("group %q task %q: volume %q is bind-mounted at %s in a mount namespace of the task's own, before it starts (as Nomad's exec driver mounts it inside the task's chroot)",
					g.Name, t.Name, vm.Volume, where))
			}
			if note := jobspec.GoPluginNote(t); note != "" {
				out = append(out, fmt.Sprintf("group %q: %s", g.Name, note))
			}
		}
	}
	return out
}

// StopJob records that no allocation of the job should run (and, with
// purge, that the job is to be forgotten) and waits until the reconciler
// has stopped them. It uses its own deadline rather than the request's
// for the wait: the stop is recorded and finishes whatever the client does.
func (a *Agent) StopJob(ctx context.Context, jobID string, purge bool) error {
	err := a.db.Update(func(tx *state.Tx) error {
		js, err := tx.Job(jobID)
		if err != nil {
			return err
		}
		rec := *js.Job
		if rec.Stop && (rec.Purge || !purge) {
			return nil
		}
		rec.Stop, rec.Purge = true, rec.Purge || purge
		rec.ModifyTime = time.Now()
		return tx.PutJob(&rec)
	})
	if errors.Is(err, state.ErrJobNotFound) {
		return fmt.Errorf("job %q: %w", jobID, api.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("stopping job %q: %w", jobID, err)
	}
	if err := a.jobQueue.AddAndWait(ctx, jobID); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, stopTimeout)
	defer cancel()
	return a.waitJobStopped(wctx, jobID, purge)
}

// waitJobStopped waits until every allocation of the job is done and, for a
// purge, forgotten.
func (a *Agent) waitJobStopped(ctx context.Context, jobID string, purge bool) error {
	for {
		a.mu.Lock()
		changed := a.changed
		a.mu.Unlock()
		entries := a.jobAllocs(jobID)
		done := true
		for _, e := range entries {
			select {
			case <-e.runner.Done():
			default:
				done = false
			}
		}
		if done && (!purge || len(entries) == 0) {
			if st := a.jobQueue.Status(jobID); st.LastError != nil {
				return fmt.Errorf("stopping job %q: %w", jobID, st.LastError)
			}
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("stopping job %q: %w", jobID, ctx.Err())
		}
	}
}

// RevertJob submits an earlier version's spec again, as a new version, as
// Nomad's `job revert` does.
func (a *Agent) RevertJob(ctx context.Context, jobID string, version uint64) (*api.JobRegisterResponse, error) {
	js, err := a.db.Job(jobID)
	if errors.Is(err, state.ErrJobNotFound) {
		return nil, fmt.Errorf("job %q: %w", jobID, api.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	if version == js.Job.Version {
		return nil, &apiserver.FieldError{Field: "JobVersion", Err: fmt.Errorf("version %d is the current version of job %q", version, jobID)}
	}
	versions, err := a.db.JobVersions(jobID)
	if err != nil {
		return nil, err
	}
	for _, v := range versions {
		if v.Version == version {
			return a.RunJob(ctx, v.Job)
		}
	}
	return nil, &apiserver.FieldError{Field: "JobVersion", Err: fmt.Errorf(
		"job %q has no version %d (the last %d versions are kept)", jobID, version, state.MaxJobVersions)}
}

// JobVersions lists a job's kept versions, newest first.
func (a *Agent) JobVersions(ctx context.Context, jobID string) ([]*api.Job, error) {
	js, err := a.db.Job(jobID)
	if errors.Is(err, state.ErrJobNotFound) {
		return nil, fmt.Errorf("job %q: %w", jobID, api.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	versions, err := a.db.JobVersions(jobID)
	if err != nil {
		return nil, err
	}
	out := make([]*api.Job, 0, len(versions))
	for _, v := range versions {
		j := apiJob(v.Job)
		j.Version, j.SubmitTime, j.Stable = v.Version, v.SubmitTime.UnixNano(), v.Stable
		j.Stop = v.Version == js.Job.Version && js.Job.Stop
		out = append(out, j)
	}
	return out, nil
}

// jobAllocs returns every allocation of a job, newest first.
func (a *Agent) jobAllocs(jobID string) []*allocEntry {
	a.mu.Lock()
	var out []*allocEntry
	for _, e := range a.allocs {
		if e.jobID == jobID {
			out = append(out, e)
		}
	}
	a.mu.Unlock()
	sortNewestFirst(out)
	return out
}

func sortNewestFirst(entries []*allocEntry) {
	sort.SliceStable(entries, func(i, j int) bool {
		ti, tj := entries[i].created, entries[j].created
		if !ti.Equal(tj) {
			return ti.After(tj)
		}
		return entries[i].runner.ID() < entries[j].runner.ID()
	})
}

// datacenterMatches applies Nomad's datacenter globs to this agent's.
func (a *Agent) datacenterMatches(patterns []string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if ok, err := path.Match(p, a.cfg.Datacenter); err == nil && ok {
			return true
		}
	}
	return false
}

// Jobs lists every job the agent has a record of.
func (a *Agent) Jobs(ctx context.Context) ([]*api.JobListStub, error) {
	recs, err := a.db.Jobs()
	if err != nil {
		return nil, fmt.Errorf("listing jobs: %w", err)
	}
	out := make([]*api.JobListStub, 0, len(recs))
	for _, js := range recs {
		j := a.describeJob(js)
		out = append(out, &api.JobListStub{ID: j.ID, Name: j.Name, Type: j.Type, Status: j.Status,
			StatusDescription: j.StatusDescription, Stop: j.Stop, Version: j.Version, SubmitTime: j.SubmitTime,
			ModifyTime: j.ModifyTime, JobSummary: j.JobSummary})
	}
	return out, nil
}

// Job describes one job: its record, current version and allocations.
func (a *Agent) Job(ctx context.Context, id string) (*api.Job, error) {
	js, err := a.db.Job(id)
	if errors.Is(err, state.ErrJobNotFound) {
		return nil, fmt.Errorf("job %q: %w", id, api.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("job %q: %w", id, err)
	}
	return a.describeJob(js), nil
}

func (a *Agent) describeJob(js *state.JobState) *api.Job {
	entries := a.jobAllocs(js.Job.ID)
	snaps := make([]*taskrunner.AllocSnapshot, len(entries))
	for i, e := range entries {
		snaps[i] = e.runner.State()
	}
	return jobStatus(js, snaps)
}

// Allocs lists a job's allocations, newest first.
func (a *Agent) Allocs(ctx context.Context, jobID string) ([]*api.AllocListStub, error) {
	entries := a.jobAllocs(jobID)
	if len(entries) == 0 {
		if _, err := a.db.Job(jobID); err != nil {
			if errors.Is(err, state.ErrJobNotFound) {
				return nil, fmt.Errorf("job %q: %w", jobID, api.ErrNotFound)
			}
			return nil, err
		}
	}
	out := make([]*api.AllocListStub, len(entries))
	for i, e := range entries {
		out[i] = allocation(e.runner).Stub()
	}
	return out, nil
}

// Alloc finds an allocation by ID or unique prefix.
func (a *Agent) Alloc(ctx context.Context, id string) (*api.Allocation, error) {
	e, err := a.lookupAlloc(id)
	if err != nil {
		return nil, err
	}
	out := allocation(e.runner)
	out.Volumes = a.allocVolumes(e.runner)
	return out, nil
}

func (a *Agent) lookupAlloc(prefix string) (*allocEntry, error) {
	if prefix == "" {
		return nil, &apiserver.FieldError{Field: "AllocID", Err: errors.New("an allocation ID or prefix is required")}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if e, ok := a.allocs[prefix]; ok {
		return e, nil
	}
	var matches []string
	for id := range a.allocs {
		if strings.HasPrefix(id, prefix) {
			matches = append(matches, id)
		}
	}
	switch len(matches) {
	case 0:
		// Bare: the API server names the allocation it was asked for
		// (api: "allocation \"ffff\": not found"); naming it here too
		// doubled the name in every 404.
		return nil, api.ErrNotFound
	case 1:
		return a.allocs[matches[0]], nil
	default:
		sort.Strings(matches)
		return nil, &apiserver.AmbiguousError{Prefix: prefix, Matches: matches}
	}
}

// stopAll stops every allocation the agent runs (a dev agent on exit).
func (a *Agent) stopAll() {
	a.mu.Lock()
	entries := make([]*allocEntry, 0, len(a.allocs))
	for _, e := range a.allocs {
		entries = append(entries, e)
	}
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, e := range entries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := e.runner.Stop(ctx); err != nil {
				a.logger.Warn("stopping allocation", "alloc_id", e.runner.ID(), "error", err)
			}
		}()
	}
	wg.Wait()
}
