package host

import (
	"context"
	"errors"
	"fmt"
	"path"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/pluginhost/pluginhost/host/api"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// updateWait bounds how long old allocations of an updated job keep running
// while the new ones start.
const updateWait = 2 * time.Minute

// stopTimeout bounds a job stop; kill_timeout is per task and the stops run
// in parallel, so this is generous.
const stopTimeout = 5 * time.Minute

// RunJob starts a job's allocations. An unchanged job whose allocations are
// wanted already starts nothing; a changed one replaces them (see doc.go).
func (a *Agent) RunJob(ctx context.Context, job *jobspec.Job) (*api.JobRegisterResponse, error) {
	if job == nil || job.ID == "" {
		return nil, &api.FieldError{Field: "Job", Err: errors.New("a job with an ID is required")}
	}
	if !a.datacenterMatches(job.Datacenters) {
		return nil, &api.FieldError{Field: "Datacenters", Err: fmt.Errorf(
			"this agent is in datacenter %q, the job asks for %s", a.cfg.Datacenter, strings.Join(job.Datacenters, ", "))}
	}
	a.jobMu.Lock()
	defer a.jobMu.Unlock()

	old := a.wantedAllocs(job.ID)
	if len(old) > 0 && sameJob(old[0].runner.State().Alloc.Job, job) {
		return &api.JobRegisterResponse{JobID: job.ID}, nil
	}

	resp := &api.JobRegisterResponse{JobID: job.ID}
	var started []*allocEntry
	for _, g := range job.TaskGroups {
		for i := 0; i < g.Count; i++ {
			ar, err := taskrunner.NewAllocRunner(a.runnerCfg, job, g.Name, i)
			if err != nil {
				// Roll back what this submission started: a job runs whole
				// or not at all.
				a.stopEntries(started, false)
				return nil, fmt.Errorf("starting %s[%d]: %w", g.Name, i, err)
			}
			e := &allocEntry{runner: ar, jobID: job.ID}
			a.track(e)
			ar.Run()
			started = append(started, e)
			resp.AllocIDs = append(resp.AllocIDs, ar.ID())
		}
	}
	if len(old) > 0 {
		// The replaced allocations stop once their successors run, in the
		// background: the submitter need not wait for it.
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			a.replace(old, started)
		}()
	}
	return resp, nil
}

// replace stops old once every allocation of next is running or finished,
// or after updateWait.
func (a *Agent) replace(old, next []*allocEntry) {
	deadline := time.NewTimer(updateWait)
	defer deadline.Stop()
	for {
		a.mu.Lock()
		changed := a.changed
		a.mu.Unlock()
		if allSettled(next) {
			break
		}
		select {
		case <-changed:
		case <-deadline.C:
			a.logger.Warn("job update: new allocations not running in time, stopping the old ones anyway",
				"wait", updateWait)
			a.stopEntries(old, false)
			return
		}
	}
	a.stopEntries(old, false)
}

func allSettled(entries []*allocEntry) bool {
	for _, e := range entries {
		switch e.runner.State().Alloc.ClientStatus {
		case state.AllocClientStatusRunning, state.AllocClientStatusComplete, state.AllocClientStatusFailed:
		default:
			return false
		}
	}
	return true
}

// StopJob stops every allocation of a job; purge also forgets them.
func (a *Agent) StopJob(ctx context.Context, jobID string, purge bool) error {
	a.jobMu.Lock()
	defer a.jobMu.Unlock()
	entries := a.jobAllocs(jobID)
	if len(entries) == 0 {
		return fmt.Errorf("job %q: %w", jobID, api.ErrNotFound)
	}
	return a.stopEntries(entries, purge)
}

// stopEntries stops (or destroys) allocations in parallel and waits. It uses
// its own deadline rather than the request's: a client that goes away must
// not leave a job half stopped.
func (a *Agent) stopEntries(entries []*allocEntry, purge bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	errs := make(chan error, len(entries))
	for _, e := range entries {
		go func() {
			if purge {
				err := e.runner.Destroy(ctx)
				if err == nil {
					a.mu.Lock()
					delete(a.allocs, e.runner.ID())
					a.mu.Unlock()
				}
				errs <- err
				return
			}
			errs <- e.runner.Stop(ctx)
		}()
	}
	var all []error
	for range entries {
		if err := <-errs; err != nil {
			all = append(all, err)
		}
	}
	a.notifyChanged()
	return errors.Join(all...)
}

// wantedAllocs returns a job's allocations whose desired status is run,
// newest first.
func (a *Agent) wantedAllocs(jobID string) []*allocEntry {
	var out []*allocEntry
	for _, e := range a.jobAllocs(jobID) {
		if e.runner.State().Alloc.DesiredStatus == state.AllocDesiredStatusRun {
			out = append(out, e)
		}
	}
	return out
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

// sameJob compares two submissions of a job, ignoring where they were read
// from.
func sameJob(a, b *jobspec.Job) bool {
	if a == nil || b == nil {
		return false
	}
	x, y := *a, *b
	x.SourcePath, y.SourcePath = "", ""
	return reflect.DeepEqual(&x, &y)
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

// Jobs lists every job the agent has allocations of.
func (a *Agent) Jobs(ctx context.Context) ([]*api.JobListStub, error) {
	a.mu.Lock()
	ids := make(map[string]struct{})
	for _, e := range a.allocs {
		ids[e.jobID] = struct{}{}
	}
	a.mu.Unlock()
	out := make([]*api.JobListStub, 0, len(ids))
	for id := range ids {
		j := a.job(id)
		if j == nil {
			continue
		}
		out = append(out, &api.JobListStub{ID: j.ID, Name: j.Name, Type: j.Type, Status: j.Status,
			StatusDescription: j.StatusDescription, Stop: j.Stop, SubmitTime: j.SubmitTime,
			ModifyTime: j.ModifyTime, JobSummary: j.JobSummary})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Job describes one job, from its newest allocation's copy of the job.
func (a *Agent) Job(ctx context.Context, id string) (*api.Job, error) {
	j := a.job(id)
	if j == nil {
		return nil, fmt.Errorf("job %q: %w", id, api.ErrNotFound)
	}
	return j, nil
}

func (a *Agent) job(id string) *api.Job {
	entries := a.jobAllocs(id)
	if len(entries) == 0 {
		return nil
	}
	snaps := make([]*taskrunner.AllocSnapshot, len(entries))
	for i, e := range entries {
		snaps[i] = e.runner.State()
	}
	return jobFromAllocs(snaps)
}

// Allocs lists a job's allocations, newest first.
func (a *Agent) Allocs(ctx context.Context, jobID string) ([]*api.AllocListStub, error) {
	entries := a.jobAllocs(jobID)
	if len(entries) == 0 {
		return nil, fmt.Errorf("job %q: %w", jobID, api.ErrNotFound)
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
	return allocation(e.runner), nil
}

func (a *Agent) lookupAlloc(prefix string) (*allocEntry, error) {
	if prefix == "" {
		return nil, &api.FieldError{Field: "AllocID", Err: errors.New("an allocation ID or prefix is required")}
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
		return nil, fmt.Errorf("allocation %q: %w", prefix, api.ErrNotFound)
	case 1:
		return a.allocs[matches[0]], nil
	default:
		sort.Strings(matches)
		return nil, &api.AmbiguousError{Prefix: prefix, Matches: matches}
	}
}

// stopAll stops every allocation the agent runs.
func (a *Agent) stopAll() {
	a.jobMu.Lock()
	defer a.jobMu.Unlock()
	a.mu.Lock()
	entries := make([]*allocEntry, 0, len(a.allocs))
	for _, e := range a.allocs {
		entries = append(entries, e)
	}
	a.mu.Unlock()
	if err := a.stopEntries(entries, false); err != nil {
		a.logger.Warn("stopping allocations", "error", err)
	}
}
