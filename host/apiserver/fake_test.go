package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/jobspec"
)

// fakeBackend is an in-memory Backend for the server's tests: the real agent
// is another package's job, and the server's contract is the interface.
type fakeBackend struct {
	mu      sync.Mutex
	jobs    map[string]*api.Job
	allocs  map[string]*api.Allocation
	plugins map[string]*api.CSIPlugin
	ready   bool
	logs    map[string]string // "alloc/task/stdout" → content
	ran     []*jobspec.Job
	stopped []string
	// panicIn names a method that panics, to test the recover middleware.
	panicIn string
	// follow feeds followed logs; logErr ends a log stream with an error.
	follow chan string
	logErr error

	// calls counts every Backend method call, so that a test can show a
	// refused request reached none.
	calls atomic.Int64

	subs  map[int]chan *api.Event
	next  int
	unsub chan struct{} // one value per ended subscription
	subd  chan struct{} // one value per new subscription
}

func newFakeBackend() *fakeBackend {
	return &fakeBackend{
		jobs: map[string]*api.Job{}, allocs: map[string]*api.Allocation{}, plugins: map[string]*api.CSIPlugin{},
		logs: map[string]string{}, follow: make(chan string),
		subs: map[int]chan *api.Event{}, unsub: make(chan struct{}, 16), subd: make(chan struct{}, 16),
	}
}

func (f *fakeBackend) maybePanic(method string) {
	f.mu.Lock()
	p := f.panicIn
	f.mu.Unlock()
	if p == method {
		panic("fake backend: boom in " + method)
	}
}

func (f *fakeBackend) RunJob(ctx context.Context, job *jobspec.Job) (*api.JobRegisterResponse, error) {
	f.calls.Add(1)
	f.maybePanic("RunJob")
	f.mu.Lock()
	defer f.mu.Unlock()
	if job.ID == "reject" {
		return nil, &FieldError{Field: "Job.ID", Err: errors.New(`the fake backend refuses job "reject"`)}
	}
	f.ran = append(f.ran, job)
	f.jobs[job.ID] = &api.Job{ID: job.ID, Name: job.Name, Type: job.Type, Status: api.JobStatusPending}
	return &api.JobRegisterResponse{JobID: job.ID, AllocIDs: []string{job.ID + "-alloc"}}, nil
}

func (f *fakeBackend) StopJob(ctx context.Context, id string, purge bool) error {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.jobs[id]; !ok {
		return fmt.Errorf("job %q: %w", id, api.ErrNotFound)
	}
	f.stopped = append(f.stopped, fmt.Sprintf("%s purge=%v", id, purge))
	return nil
}

func (f *fakeBackend) Jobs(ctx context.Context) ([]*api.JobListStub, error) {
	f.calls.Add(1)
	f.maybePanic("Jobs")
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*api.JobListStub
	for _, j := range f.jobs {
		out = append(out, &api.JobListStub{ID: j.ID, Name: j.Name, Type: j.Type, Status: j.Status,
			SubmitTime: j.SubmitTime, JobSummary: j.JobSummary})
	}
	slices.SortFunc(out, func(a, b *api.JobListStub) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (f *fakeBackend) Job(ctx context.Context, id string) (*api.Job, error) {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	j, ok := f.jobs[id]
	if !ok {
		return nil, api.ErrNotFound
	}
	return j, nil
}

func (f *fakeBackend) Allocs(ctx context.Context, jobID string) ([]*api.AllocListStub, error) {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.jobs[jobID]; !ok {
		return nil, api.ErrNotFound
	}
	var out []*api.AllocListStub
	for _, a := range f.allocs {
		if a.JobID == jobID {
			out = append(out, a.Stub())
		}
	}
	slices.SortFunc(out, func(a, b *api.AllocListStub) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (f *fakeBackend) Alloc(ctx context.Context, id string) (*api.Allocation, error) {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	var matches []string
	for aid := range f.allocs {
		if aid == id {
			return f.allocs[aid], nil
		}
		if strings.HasPrefix(aid, id) {
			matches = append(matches, aid)
		}
	}
	switch len(matches) {
	case 0:
		return nil, api.ErrNotFound
	case 1:
		return f.allocs[matches[0]], nil
	}
	slices.Sort(matches)
	return nil, &AmbiguousError{Prefix: id, Matches: matches}
}

func (f *fakeBackend) AllocLogs(ctx context.Context, allocID, task string, stderr, follow bool, w io.Writer) error {
	f.calls.Add(1)
	kind := "stdout"
	if stderr {
		kind = "stderr"
	}
	f.mu.Lock()
	content, ok := f.logs[allocID+"/"+task+"/"+kind]
	logErr := f.logErr
	f.mu.Unlock()
	if !ok {
		return fmt.Errorf("no %s log for %s/%s: %w", kind, allocID, task, api.ErrNotFound)
	}
	if _, err := io.WriteString(w, content); err != nil {
		return err
	}
	if logErr != nil {
		return logErr
	}
	for follow {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case s, ok := <-f.follow:
			if !ok {
				return nil
			}
			if _, err := io.WriteString(w, s); err != nil {
				return err
			}
		}
	}
	return nil
}

func (f *fakeBackend) Plugins(ctx context.Context) ([]*api.CSIPluginListStub, error) {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*api.CSIPluginListStub
	for _, p := range f.plugins {
		out = append(out, &api.CSIPluginListStub{ID: p.ID, Provider: p.Provider,
			ControllerRequired: p.ControllerRequired,
			ControllersHealthy: p.ControllersHealthy, ControllersExpected: p.ControllersExpected,
			NodesHealthy: p.NodesHealthy, NodesExpected: p.NodesExpected})
	}
	slices.SortFunc(out, func(a, b *api.CSIPluginListStub) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (f *fakeBackend) Plugin(ctx context.Context, id string) (*api.CSIPlugin, error) {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.plugins[id]
	if !ok {
		return nil, api.ErrNotFound
	}
	return p, nil
}

// Events hands out a buffered channel per subscriber; the goroutine that
// closes it is owned by the subscription's context.
func (f *fakeBackend) Events(ctx context.Context, from uint64) (<-chan *api.Event, error) {
	f.calls.Add(1)
	f.mu.Lock()
	id := f.next
	f.next++
	ch := make(chan *api.Event, 1024)
	f.subs[id] = ch
	f.mu.Unlock()
	f.subd <- struct{}{}
	go func() {
		<-ctx.Done()
		f.mu.Lock()
		if _, ok := f.subs[id]; ok {
			delete(f.subs, id)
			close(ch)
		}
		f.mu.Unlock()
		f.unsub <- struct{}{}
	}()
	return ch, nil
}

// publish sends ev to every subscriber, numbering it.
func (f *fakeBackend) publish(ev *api.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ch := range f.subs {
		ch <- ev
	}
}

// closeSubs ends every subscription from the backend's side, as an agent
// shutting down would.
func (f *fakeBackend) closeSubs() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, ch := range f.subs {
		close(ch)
		delete(f.subs, id)
	}
}

func (f *fakeBackend) Self(ctx context.Context) (*api.AgentSelf, error) {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	return &api.AgentSelf{Version: "test", NodeName: "node1", DataDir: "/data", Ready: f.ready}, nil
}

func (f *fakeBackend) setReady(r bool) {
	f.mu.Lock()
	f.ready = r
	f.mu.Unlock()
}
