package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/allocdir"
	"github.com/pluginhost/pluginhost/host/apiconv"
	"github.com/pluginhost/pluginhost/host/apiserver"
	"github.com/pluginhost/pluginhost/host/jobs"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// RunJob records job as the next version of its job, together with every
// allocation of that version, in one commit; then the job's reconciler
// starts them and retires the previous version's (package jobs). An
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
	if !jobspec.DatacenterMatches(a.cfg.Datacenter, job.Datacenters) {
		return nil, &apiserver.FieldError{Field: "Datacenters", Err: fmt.Errorf(
			"this agent is in datacenter %q, the job asks for %s", a.cfg.Datacenter, strings.Join(job.Datacenters, ", "))}
	}
	// Users and capabilities are this machine's: refused now, naming the
	// task and field, rather than as a driver failure after the job is
	// recorded (Nomad finds them only when the task starts).
	policy := a.cfg.HostPolicy()
	policy.ReachTaskDir = func(u *jobspec.HostUser) error { return allocdir.Reach(a.cfg.DataDir, u.UID, u.GIDs) }
	if err := jobspec.CheckHost(job, policy); err != nil {
		return nil, &apiserver.FieldError{Field: "Job", Err: err}
	}
	// The claim check and the commit happen under the reconciler's lock
	// (allocFactory.Submit), so that two submissions cannot both take a
	// volume that allows one writer.
	res, ids, err := a.jobs.Submit(ctx, job)
	if err != nil {
		return nil, err
	}
	return &api.JobRegisterResponse{JobID: job.ID, Version: res.Job.Version, AllocIDs: ids,
		Warnings: a.warnings(job)}, nil
}

// warnings are what RunJob tells the submitter: what runs differently
// from Nomad, what the host lacks, and commands that cannot start here.
func (a *Agent) warnings(job *jobspec.Job) []string {
	w := append(jobspec.Warnings(job), a.cgroups.Warnings()...)
	cmds, _ := jobspec.CheckCommands(job, taskrunner.ResolveCommand)
	w = append(w, cmds...)
	for _, g := range job.TaskGroups {
		for _, t := range g.Tasks {
			if max := a.cfg.MaxKillTimeout; max > 0 && t.KillTimeout > max {
				w = append(w, fmt.Sprintf("group %q task %q: kill_timeout %s is capped at the agent's max_kill_timeout %s", g.Name, t.Name, t.KillTimeout, max))
			}
		}
	}
	return w
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
	if err := a.jobs.Reconcile(ctx, jobID); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, jobs.StopTimeout)
	defer cancel()
	return a.jobs.WaitStopped(wctx, jobID, purge)
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
		j := apiconv.Job(v.Job)
		j.Version, j.SubmitTime, j.Stable = v.Version, v.SubmitTime.UnixNano(), v.Stable
		j.Stop = v.Version == js.Job.Version && js.Job.Stop
		if spec, err := json.Marshal(v.Job); err == nil {
			j.Spec = spec
		}
		out = append(out, j)
	}
	return out, nil
}

// Jobs lists every job the agent has a record of.
func (a *Agent) Jobs(ctx context.Context) ([]*api.JobListStub, error) {
	recs, err := a.db.Jobs()
	if err != nil {
		return nil, fmt.Errorf("listing jobs: %w", err)
	}
	out := make([]*api.JobListStub, 0, len(recs))
	for _, js := range recs {
		j := describeJob(a.jobs, js)
		out = append(out, &api.JobListStub{ID: j.ID, Name: j.Name, Type: j.Type, Status: j.Status,
			StatusDescription: j.StatusDescription, Stop: j.Stop, Version: j.Version, SubmitTime: j.SubmitTime,
			ModifyTime: j.ModifyTime, JobSummary: j.JobSummary})
	}
	return out, nil
}

// Job describes one job: its record, current version and allocations.
func (a *Agent) Job(ctx context.Context, id string) (*api.Job, error) {
	// The API names the job in its answer.
	js, err := a.db.Job(id)
	if errors.Is(err, state.ErrJobNotFound) {
		return nil, api.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return describeJob(a.jobs, js), nil
}

func describeJob(r *jobs.Reconciler, js *state.JobState) *api.Job {
	runners := r.JobAllocs(js.Job.ID)
	snaps := make([]*taskrunner.AllocSnapshot, len(runners))
	for i, ar := range runners {
		snaps[i] = ar.State()
	}
	return apiconv.JobStatus(js, snaps)
}

// Allocs lists a job's allocations, newest first.
func (a *Agent) Allocs(ctx context.Context, jobID string) ([]*api.AllocListStub, error) {
	runners := a.jobs.JobAllocs(jobID)
	if len(runners) == 0 {
		if _, err := a.db.Job(jobID); err != nil {
			if errors.Is(err, state.ErrJobNotFound) {
				return nil, fmt.Errorf("job %q: %w", jobID, api.ErrNotFound)
			}
			return nil, err
		}
	}
	out := make([]*api.AllocListStub, len(runners))
	for i, ar := range runners {
		out[i] = apiconv.Allocation(ar.State(), ar.AllocDir()).Stub()
	}
	return out, nil
}

// Alloc finds an allocation by ID or unique prefix.
func (a *Agent) Alloc(ctx context.Context, id string) (*api.Allocation, error) {
	ar, err := lookupAlloc(a.jobs, id)
	if err != nil {
		return nil, err
	}
	snap := ar.State()
	out := apiconv.Allocation(snap, ar.AllocDir())
	out.Volumes = apiconv.AllocVolumes(snap, a.volumes.Volume)
	return out, nil
}

func lookupAlloc(r *jobs.Reconciler, prefix string) (jobs.Runner, error) {
	if prefix == "" {
		return nil, &apiserver.FieldError{Field: "AllocID", Err: errors.New("an allocation ID or prefix is required")}
	}
	switch ids := r.Matching(prefix); len(ids) {
	case 0:
		// Bare: the API server names the allocation it was asked for
		// (api: "allocation \"ffff\": not found"); naming it here too
		// doubled the name in every 404.
		return nil, api.ErrNotFound
	case 1:
		if ar := r.Alloc(ids[0]); ar != nil {
			return ar, nil
		}
		// Forgotten since it was matched.
		return nil, fmt.Errorf("allocation %q: %w", prefix, api.ErrNotFound)
	default:
		return nil, &apiserver.AmbiguousError{Prefix: prefix, Matches: ids}
	}
}
