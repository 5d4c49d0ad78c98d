package apiserver

import (
	"context"
	"fmt"

	"github.com/pluginhost/pluginhost/api"
)

// JobVersions: the fake keeps one version per job, the current one.
func (f *fakeBackend) JobVersions(ctx context.Context, id string) ([]*api.Job, error) {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	j, ok := f.jobs[id]
	if !ok {
		return nil, fmt.Errorf("job %q: %w", id, api.ErrNotFound)
	}
	return []*api.Job{j}, nil
}

func (f *fakeBackend) RevertJob(ctx context.Context, id string, version uint64) (*api.JobRegisterResponse, error) {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	j, ok := f.jobs[id]
	if !ok {
		return nil, fmt.Errorf("job %q: %w", id, api.ErrNotFound)
	}
	if version >= j.Version {
		return nil, fieldErrorf("JobVersion", "job %q has no version %d before its current %d", id, version, j.Version)
	}
	j.Version++
	return &api.JobRegisterResponse{JobID: id}, nil
}
