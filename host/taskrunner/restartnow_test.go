package taskrunner

import (
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/host/jobspec"
)

// RestartNow restarts at once and outside the restart policy: a task whose
// policy allows no restart at all, and a 1 h delay, is restarted three times
// in a row, each with the reason and "Task restarting in 0s".
func TestRestartNow(t *testing.T) {
	a := newAgent(t, "")
	job := testJob(jobspec.JobTypeService, rawTask("web", "sleep"))
	job.TaskGroups[0].Restart = &jobspec.RestartPolicy{Attempts: 0, Interval: time.Hour, Delay: time.Hour, Mode: jobspec.RestartModeFail}
	ar := a.Run(job)
	for i := 1; i <= 3; i++ {
		a.Events.Wait(t, "web", EventStarted, i)
		ar.Task("web").RestartNow("the agent says so")
		if ev := a.Events.Wait(t, "web", EventRestartSignal, i); ev.Message != "the agent says so" {
			t.Fatalf("restart signal %q", ev.Message)
		}
		if ev := a.Events.Wait(t, "web", EventRestarting, i); ev.Message != "Task restarting in 0s" {
			t.Fatalf("restarting %q", ev.Message)
		}
	}
	a.Events.Wait(t, "web", EventStarted, 4)
	if n := a.Events.Count("web", EventNotRestarting); n != 0 {
		t.Fatalf("%d Not Restarting events: RestartNow counted against the policy", n)
	}
}
