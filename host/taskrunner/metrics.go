package taskrunner

import "github.com/pluginhost/pluginhost/host/state"

// TaskMetrics counts task lifecycle events; the agent's metrics implement
// it (Config.Metrics). It is called synchronously after the event is
// stored, so it must be quick and safe for concurrent use.
type TaskMetrics interface {
	// TaskStarted: the agent launched the task (not a re-adoption).
	TaskStarted(t TaskLabels)
	// TaskRestarted: the restart policy will start the task again.
	TaskRestarted(t TaskLabels)
	// TaskExited: the task's process ended. outcome is ExitSuccess,
	// ExitFailure, ExitKilled (the agent stopped it) or ExitUnknown (it
	// died while the agent was down).
	TaskExited(t TaskLabels, outcome string)
}

// OOMMetrics is an optional part of TaskMetrics: it counts launches the
// kernel's OOM killer ended (Nomad's client.allocs.oom_killed). Optional,
// so that a TaskMetrics written before it still is one.
type OOMMetrics interface {
	// TaskOOMKilled: a process of the task's cgroup was OOM-killed during
	// the launch that just ended.
	TaskOOMKilled(t TaskLabels)
}

// countOOMKill tells m about an OOM-killed launch, if m counts them.
func countOOMKill(m TaskMetrics, l TaskLabels) {
	if om, ok := m.(OOMMetrics); ok {
		om.TaskOOMKilled(l)
	}
}

// TaskLabels name a task for metrics: bounded by the jobs, unlike
// allocation IDs, which change with every version and restart of a job.
type TaskLabels struct {
	Job, Group, Task string
}

// Exit outcomes of TaskMetrics.TaskExited.
const (
	ExitSuccess = "success"
	ExitFailure = "failure"
	ExitKilled  = "killed"
	ExitUnknown = "unknown"
)

// countEvent tells m about ev, if it is one of the events it counts.
func countEvent(m TaskMetrics, l TaskLabels, ev *state.TaskEvent) {
	switch ev.Type {
	case EventStarted:
		m.TaskStarted(l)
	case EventRestarting:
		m.TaskRestarted(l)
	case EventKilled:
		m.TaskExited(l, ExitKilled)
	case EventTerminated:
		switch {
		case ev.Details["exit_code"] == "unknown":
			m.TaskExited(l, ExitUnknown)
		case ev.ExitCode == 0 && ev.Signal == 0:
			m.TaskExited(l, ExitSuccess)
		default:
			m.TaskExited(l, ExitFailure)
		}
	}
}

func (tr *TaskRunner) labels() TaskLabels {
	l := TaskLabels{Task: tr.task.Name}
	if tr.req != nil {
		if tr.req.Job != nil {
			l.Job = tr.req.Job.ID
		}
		if tr.req.Group != nil {
			l.Group = tr.req.Group.Name
		}
	}
	return l
}
