package api

import (
	"context"
	"fmt"
)

// JobVersions: the fake keeps one version per job, the current one.
func (f *fakeBackend) JobVersions(ctx context.Context, id string) ([]*Job, error) {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	j, ok := f.jobs[id]
	if !ok {
		return nil, fmt.Errorf("job %q: %w", id, ErrNotFound)
	}
	return []*Job{j}, nil
}

func (f *fakeBackend) RevertJob(ctx context.Context, id string, version uint64) (*JobRegisterResponse, error) {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	j, ok := f.jobs[id]
	if !ok {
		return nil, fmt.Errorf("job %q: %w", id, ErrNotFound)
	}
	if version >= j.Version {
		return nil, fieldErrorf("JobVersion", "job %q has no version %d before its current %d", id, version, j.Version)
	}
	j.Version++
	return &JobRegisterResponse{JobID: id}, nil
}
