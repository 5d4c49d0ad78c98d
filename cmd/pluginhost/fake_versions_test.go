package main

import (
	"context"
	"fmt"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/apiserver"
)

// JobVersions: the fake's jobs have their current version and, when it is
// above 0, the versions before it with the same spec.
func (f *fakeAgent) JobVersions(ctx context.Context, id string) ([]*api.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	j, ok := f.jobs[id]
	if !ok {
		return nil, fmt.Errorf("job %q: %w", id, api.ErrNotFound)
	}
	var out []*api.Job
	for v := int64(j.Version); v >= 0; v-- {
		c := *j
		c.Version, c.SubmitTime = uint64(v), j.SubmitTime-int64(j.Version-uint64(v))*3600e9
		out = append(out, &c)
	}
	return out, nil
}

func (f *fakeAgent) RevertJob(ctx context.Context, id string, version uint64) (*api.JobRegisterResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	j, ok := f.jobs[id]
	if !ok {
		return nil, fmt.Errorf("job %q: %w", id, api.ErrNotFound)
	}
	if version >= j.Version {
		return nil, &apiserver.FieldError{Field: "JobVersion", Err: fmt.Errorf("job %q has no version %d before its current %d", id, version, j.Version)}
	}
	j.Version++
	f.stopped = append(f.stopped, fmt.Sprintf("%s revert=%d", id, version))
	return &api.JobRegisterResponse{JobID: id}, nil
}
