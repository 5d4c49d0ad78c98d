package host

import (
	"fmt"
	"maps"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// allocation converts a runner's snapshot into the API's Allocation.
func allocation(ar *taskrunner.AllocRunner) *api.Allocation {
	snap := ar.State()
	al := snap.Alloc
	out := &api.Allocation{
		AllocListStub: api.AllocListStub{
			ID:            al.ID,
			JobID:         al.JobID,
			JobVersion:    al.JobVersion,
			TaskGroup:     al.TaskGroup,
			ClientStatus:  al.ClientStatus,
			DesiredStatus: al.DesiredStatus,
			TaskStates:    make(map[string]*api.TaskState, len(snap.Tasks)),
			CreateTime:    al.CreateTime.UnixNano(),
			ModifyTime:    al.ModifyTime.UnixNano(),
		},
		AllocDir: ar.AllocDir(),
	}
	if al.Job != nil {
		out.Name = fmt.Sprintf("%s.%s[%d]", al.Job.ID, al.TaskGroup, al.Index)
		out.JobType = al.Job.Type
		out.TaskResources = taskResources(al.Job, al.TaskGroup)
	}
	for _, t := range snap.Tasks {
		out.Tasks = append(out.Tasks, t.Name)
		ts := &api.TaskState{
			State:       t.State.State,
			Failed:      t.State.Failed,
			Restarts:    t.State.Restarts,
			LastRestart: t.State.LastRestart,
			StartedAt:   t.State.StartedAt,
			FinishedAt:  t.State.FinishedAt,
		}
		for _, ev := range t.Events {
			ts.Events = append(ts.Events, taskEvent(ev))
		}
		out.TaskStates[t.Name] = ts
	}
	if al.DesiredStatus == state.AllocDesiredStatusStop {
		out.DesiredDescription = "alloc stopped"
	}
	return out
}

func taskEvent(ev *state.TaskEvent) *api.TaskEvent {
	if ev == nil {
		return nil
	}
	return &api.TaskEvent{
		Type:           ev.Type,
		Time:           ev.Time.UnixNano(),
		DisplayMessage: ev.Message,
		ExitCode:       ev.ExitCode,
		Signal:         ev.Signal,
		Details:        maps.Clone(ev.Details),
	}
}

// apiJob is the API's view of a job spec.
func apiJob(j *jobspec.Job) *api.Job {
	out := &api.Job{ID: j.ID, Name: j.Name, Type: j.Type, Datacenters: j.Datacenters,
		Meta: maps.Clone(j.Meta), SourcePath: j.SourcePath}
	for _, g := range j.TaskGroups {
		tg := &api.TaskGroup{Name: g.Name, Count: g.Count}
		for _, t := range g.Tasks {
			at := &api.Task{Name: t.Name, Driver: t.Driver}
			if t.CSIPluginConfig != nil {
				at.CSIPluginID, at.CSIPluginType = t.CSIPluginConfig.ID, t.CSIPluginConfig.Type
			}
			tg.Tasks = append(tg.Tasks, at)
		}
		out.TaskGroups = append(out.TaskGroups, tg)
	}
	return out
}

// jobStatus describes a job from its record and its allocations. The
// summary counts every allocation the job has, whatever version it runs:
// during an update, or when something went wrong, it shows what really
// runs, not what should.
func jobStatus(js *state.JobState, snaps []*taskrunner.AllocSnapshot) *api.Job {
	out := apiJob(js.Spec.Job)
	out.Version, out.Stop = js.Job.Version, js.Job.Stop
	out.Stable = js.Spec.Stable
	if u := js.Job.Update; u != nil {
		out.Update = &api.JobUpdate{Version: u.Version, Status: u.Status, Description: u.Description, Time: u.Time.UnixNano()}
		if js.Job.Failed(js.Job.Version) && !js.Job.Stop {
			out.StatusDescription = fmt.Sprintf("update to version %d failed: %s", u.Version, u.Description)
		}
	}
	out.SubmitTime, out.ModifyTime = js.Job.SubmitTime.UnixNano(), js.Job.ModifyTime.UnixNano()

	summary := &api.JobSummary{JobID: out.ID, Summary: map[string]api.TaskGroupSummary{}}
	for _, g := range js.Spec.Job.TaskGroups {
		summary.Summary[g.Name] = api.TaskGroupSummary{}
	}
	wanted, running, pending := 0, 0, 0
	for _, s := range snaps {
		al := s.Alloc
		if al.ModifyTime.UnixNano() > out.ModifyTime {
			out.ModifyTime = al.ModifyTime.UnixNano()
		}
		g := summary.Summary[al.TaskGroup]
		switch al.ClientStatus {
		case state.AllocClientStatusRunning:
			g.Running++
		case state.AllocClientStatusComplete:
			g.Complete++
		case state.AllocClientStatusFailed:
			g.Failed++
		default:
			g.Starting++
		}
		summary.Summary[al.TaskGroup] = g
		if al.DesiredStatus == state.AllocDesiredStatusRun {
			wanted++
			switch al.ClientStatus {
			case state.AllocClientStatusRunning:
				running++
			case state.AllocClientStatusPending:
				pending++
			}
		}
	}
	out.JobSummary = summary
	switch {
	case js.Job.Stop:
		out.Status, out.StatusDescription = api.JobStatusDead, "stopped"
	case running > 0:
		out.Status = api.JobStatusRunning
	case pending > 0 || wanted == 0 && len(snaps) == 0:
		out.Status = api.JobStatusPending
	default:
		out.Status = api.JobStatusDead
		out.StatusDescription = "all allocations finished"
	}
	if !js.Job.Stop && js.Spec.Job.Type == jobspec.JobTypeBatch && wanted > 0 && running == 0 && pending == 0 {
		out.StatusDescription = "batch complete"
	}
	return out
}

// taskResources are the group's tasks' resources, for alloc status.
func taskResources(job *jobspec.Job, group string) map[string]*api.Resources {
	for _, g := range job.TaskGroups {
		if g.Name != group {
			continue
		}
		out := make(map[string]*api.Resources, len(g.Tasks))
		for _, t := range g.Tasks {
			if r := t.Resources; r != nil {
				out[t.Name] = &api.Resources{CPU: r.CPU, MemoryMB: r.MemoryMB, MemoryMaxMB: r.MemoryMaxMB}
			}
		}
		return out
	}
	return nil
}
