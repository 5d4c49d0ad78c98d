package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/apiserver"
	"github.com/pluginhost/pluginhost/host/jobspec"
)

// fakeAgent is an in-memory apiserver.Backend for the CLI's tests. RunJob plays a
// short life for every allocation on the event stream: pending, task
// received, started, running (or, for jobs whose ID starts with "crash", a
// task that exits 1 and an allocation that fails).
type fakeAgent struct {
	mu      sync.Mutex
	jobs    map[string]*api.Job
	allocs  map[string]*api.Allocation
	plugins map[string]*api.CSIPlugin
	// generic holds plugins of other types, by "TYPE/NAME".
	generic map[string]*api.Plugin
	logs    map[string]string
	stopped []string
	subs    []chan *api.Event
	subd    chan struct{}
	index   uint64
	// following gets a value when a followed log stream has sent its
	// backlog and waits for more.
	following chan struct{}
}

var t0 = time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)

func newFakeAgent() *fakeAgent {
	return &fakeAgent{jobs: map[string]*api.Job{}, allocs: map[string]*api.Allocation{},
		plugins: map[string]*api.CSIPlugin{}, generic: map[string]*api.Plugin{}, logs: map[string]string{}, subd: make(chan struct{}, 16),
		following: make(chan struct{}, 1)}
}

// publishLocked numbers ev and fans it out; f.mu is held.
func (f *fakeAgent) publishLocked(ev *api.Event) {
	f.index++
	ev.Index = f.index
	ev.Time = t0.Add(time.Duration(f.index) * time.Second).UnixNano()
	for _, ch := range f.subs {
		ch <- ev
	}
}

// allocEventLocked publishes a snapshot: the server encodes events after
// RunJob has moved on, so they must not share the live maps.
func (f *fakeAgent) allocEventLocked(a *api.Allocation) {
	stub := a.Stub()
	stub.TaskStates = map[string]*api.TaskState{}
	for name, ts := range a.TaskStates {
		c := *ts
		c.Events = slices.Clone(ts.Events)
		stub.TaskStates[name] = &c
	}
	f.publishLocked(&api.Event{Topic: api.TopicAllocation, Type: "AllocationUpdated", Key: a.ID,
		Payload: api.EventPayload{JobID: a.JobID, AllocID: a.ID, Allocation: stub}})
}

func (f *fakeAgent) taskEventLocked(a *api.Allocation, task string, te *api.TaskEvent) {
	ts := a.TaskStates[task]
	// The event's time is the one publishLocked is about to stamp.
	te.Time = t0.Add(time.Duration(f.index+1) * time.Second).UnixNano()
	ts.Events = append(ts.Events, te)
	f.publishLocked(&api.Event{Topic: api.TopicTask, Type: "TaskEvent", Key: a.ID,
		Payload: api.EventPayload{JobID: a.JobID, AllocID: a.ID, TaskName: task, TaskEvent: te}})
}

func (f *fakeAgent) RunJob(ctx context.Context, job *jobspec.Job) (*api.JobRegisterResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &api.JobRegisterResponse{JobID: job.ID}
	if _, ok := f.jobs[job.ID]; ok {
		// A re-submission: the fake treats it as unchanged.
		return resp, nil
	}
	crash := strings.HasPrefix(job.ID, "crash")
	oom := strings.HasPrefix(job.ID, "oom")
	f.jobs[job.ID] = &api.Job{ID: job.ID, Name: job.Name, Type: job.Type, Status: api.JobStatusRunning,
		SubmitTime: t0.UnixNano()}
	for _, tg := range job.TaskGroups {
		for i := range tg.Count {
			id := fmt.Sprintf("%08x-0000-4000-8000-%012d", len(f.allocs)+1, i)
			a := &api.Allocation{AllocListStub: api.AllocListStub{ID: id, JobID: job.ID, TaskGroup: tg.Name, Name: fmt.Sprintf("%s.%s[%d]", job.ID, tg.Name, i),
				ClientStatus: api.AllocClientStatusPending, DesiredStatus: api.AllocDesiredStatusRun,
				TaskStates: map[string]*api.TaskState{}, CreateTime: t0.UnixNano(), ModifyTime: t0.UnixNano()}}
			for _, t := range tg.Tasks {
				a.Tasks = append(a.Tasks, t.Name)
				a.TaskStates[t.Name] = &api.TaskState{State: api.TaskStatePending}
			}
			f.allocs[id] = a
			resp.AllocIDs = append(resp.AllocIDs, id)
			// The life is published before the HTTP answer: a client that
			// subscribed before registering must still see all of it.
			f.allocEventLocked(a)
			for _, t := range a.Tasks {
				f.taskEventLocked(a, t, &api.TaskEvent{Type: api.TaskReceived, DisplayMessage: "Task received by client"})
				f.taskEventLocked(a, t, &api.TaskEvent{Type: api.TaskStarted, DisplayMessage: "Task started by client"})
				if crash {
					a.TaskStates[t].State, a.TaskStates[t].Failed = api.TaskStateDead, true
					f.taskEventLocked(a, t, &api.TaskEvent{Type: api.TaskTerminated, ExitCode: 1})
				} else {
					a.TaskStates[t].State = api.TaskStateRunning
				}
			}
			a.ClientStatus = api.AllocClientStatusRunning
			if crash {
				a.ClientStatus = api.AllocClientStatusFailed
			}
			f.allocEventLocked(a)
		}
	}
	if oom {
		// Killed a moment later: once job run has seen every allocation
		// running (Job below).
		return resp, nil
	}
	// The agent's judgement of the roll-out (package jobs), on the Job topic.
	u := &api.JobUpdate{Version: 0, Status: "successful", Description: "all allocations healthy"}
	if crash {
		u = &api.JobUpdate{Version: 0, Status: "failed", Description: "allocation failed"}
	}
	f.jobs[job.ID].Update = u
	f.publishLocked(&api.Event{Topic: api.TopicJob, Type: "JobUpdated", Key: job.ID, Payload: api.EventPayload{JobID: job.ID}})
	return resp, nil
}

// oomLocked kills an "oom" job's tasks, as the kernel would a moment after
// they started, and fails its roll-out.
func (f *fakeAgent) oomLocked(id string) {
	for _, a := range f.allocs {
		if a.JobID != id || a.ClientStatus != api.AllocClientStatusRunning {
			continue
		}
		for _, t := range a.Tasks {
			a.TaskStates[t].State, a.TaskStates[t].Failed = api.TaskStateDead, true
			f.taskEventLocked(a, t, &api.TaskEvent{Type: api.TaskTerminated, ExitCode: 137, DisplayMessage: "OOM Killed"})
		}
		a.ClientStatus = api.AllocClientStatusFailed
		f.allocEventLocked(a)
	}
	f.publishLocked(&api.Event{Topic: api.TopicJob, Type: "JobUpdated", Key: id, Payload: api.EventPayload{JobID: id}})
}

func (f *fakeAgent) StopJob(ctx context.Context, id string, purge bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.jobs[id]; !ok {
		return api.ErrNotFound
	}
	f.stopped = append(f.stopped, fmt.Sprintf("%s purge=%v", id, purge))
	return nil
}

func (f *fakeAgent) Jobs(ctx context.Context) ([]*api.JobListStub, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*api.JobListStub
	for _, j := range f.jobs {
		out = append(out, &api.JobListStub{ID: j.ID, Name: j.Name, Type: j.Type, Status: j.Status, SubmitTime: j.SubmitTime})
	}
	return out, nil
}

func (f *fakeAgent) Job(ctx context.Context, id string) (*api.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	j, ok := f.jobs[id]
	if !ok {
		return nil, api.ErrNotFound
	}
	out := *j
	if strings.HasPrefix(id, "oom") && j.Update == nil {
		// The first look after the submission: the tasks die now, the
		// verdict follows on the stream.
		f.oomLocked(id)
		j.Update = &api.JobUpdate{Version: 0, Status: "failed", Description: "allocation failed"}
	}
	out.JobSummary = &api.JobSummary{JobID: id, Summary: map[string]api.TaskGroupSummary{}}
	for _, a := range f.allocs {
		if a.JobID != id {
			continue
		}
		s := out.JobSummary.Summary[a.TaskGroup]
		switch a.ClientStatus {
		case api.AllocClientStatusRunning:
			s.Running++
		case api.AllocClientStatusFailed:
			s.Failed++
		}
		out.JobSummary.Summary[a.TaskGroup] = s
	}
	return &out, nil
}

func (f *fakeAgent) Allocs(ctx context.Context, jobID string) ([]*api.AllocListStub, error) {
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
	return out, nil
}

func (f *fakeAgent) Alloc(ctx context.Context, id string) (*api.Allocation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var matches []string
	for aid := range f.allocs {
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
	return nil, &apiserver.AmbiguousError{Prefix: id, Matches: matches}
}

func (f *fakeAgent) AllocLogs(ctx context.Context, allocID, task string, stderr, follow bool, w io.Writer) error {
	kind := "stdout"
	if stderr {
		kind = "stderr"
	}
	f.mu.Lock()
	s, ok := f.logs[allocID+"/"+task+"/"+kind]
	f.mu.Unlock()
	if !ok {
		return api.ErrNotFound
	}
	if _, err := io.WriteString(w, s); err != nil {
		return err
	}
	if follow {
		f.following <- struct{}{}
		<-ctx.Done()
	}
	return nil
}

func (f *fakeAgent) Plugins(ctx context.Context) ([]*api.CSIPluginListStub, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*api.CSIPluginListStub
	for _, p := range f.plugins {
		out = append(out, &api.CSIPluginListStub{ID: p.ID, Provider: p.Provider,
			ControllersHealthy: p.ControllersHealthy, ControllersExpected: p.ControllersExpected,
			NodesHealthy: p.NodesHealthy, NodesExpected: p.NodesExpected})
	}
	return out, nil
}

func (f *fakeAgent) Plugin(ctx context.Context, id string) (*api.CSIPlugin, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.plugins[id]; ok {
		return p, nil
	}
	return nil, api.ErrNotFound
}

func (f *fakeAgent) Events(ctx context.Context, from uint64) (<-chan *api.Event, error) {
	ch := make(chan *api.Event, 256)
	f.mu.Lock()
	f.subs = append(f.subs, ch)
	f.mu.Unlock()
	f.subd <- struct{}{}
	// Subscriptions live as long as the fake; the server stops reading
	// when its request ends, and the buffer absorbs the rest.
	return ch, nil
}

func (f *fakeAgent) Self(ctx context.Context) (*api.AgentSelf, error) {
	return &api.AgentSelf{Version: "test", NodeName: "node1", Ready: true}, nil
}

// publish is for tests that drive the stream themselves.
func (f *fakeAgent) publish(ev *api.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.publishLocked(ev)
}

// endStreams closes every subscription, as an agent shutting down does.
func (f *fakeAgent) endStreams() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ch := range f.subs {
		close(ch)
	}
	f.subs = nil
}

func (f *fakeAgent) RegisteredPlugins(_ context.Context, typ string) ([]*api.PluginListStub, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*api.PluginListStub
	for _, p := range f.generic {
		if typ != "" && p.Type != typ {
			continue
		}
		stub := &api.PluginListStub{Type: p.Type, Name: p.Name, Instances: len(p.Instances), Healthy: p.Healthy, Expected: p.Expected}
		if p.Active != nil {
			stub.ActiveAllocID, stub.SocketPath = p.Active.AllocID, p.Active.SocketPath
		}
		out = append(out, stub)
	}
	return out, nil
}

func (f *fakeAgent) RegisteredPlugin(_ context.Context, typ, name string) (*api.Plugin, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.generic[typ+"/"+name]; ok {
		return p, nil
	}
	return nil, api.ErrNotFound
}
