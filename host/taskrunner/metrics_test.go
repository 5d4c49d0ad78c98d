package taskrunner

import (
	"sync"
	"testing"

	"github.com/pluginhost/pluginhost/host/jobspec"
)

type countingMetrics struct {
	mu               sync.Mutex
	labels           []TaskLabels
	starts, restarts int
	exits            map[string]int
}

func (m *countingMetrics) TaskStarted(l TaskLabels) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.starts++
	m.labels = append(m.labels, l)
}

func (m *countingMetrics) TaskRestarted(TaskLabels) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.restarts++
}

func (m *countingMetrics) TaskExited(_ TaskLabels, outcome string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.exits[outcome]++
}

// The counts follow the stored events: three starts of a task that fails
// twice and is restarted twice, three failed exits.
func TestMetricsCountStartsRestartsExits(t *testing.T) {
	a := newAgent(t, "")
	m := &countingMetrics{exits: map[string]int{}}
	a.Cfg.Metrics = m
	job := testJob(jobspec.JobTypeService, rawTask("crash", "exit", "3"))
	ar := a.Run(job)
	a.Events.Wait(t, "crash", EventNotRestarting, 1)
	<-ar.Done()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.starts != 3 || m.restarts != 2 || m.exits[ExitFailure] != 3 || len(m.exits) != 1 {
		t.Fatalf("starts %d restarts %d exits %v, want 3, 2, map[failure:3]", m.starts, m.restarts, m.exits)
	}
	want := TaskLabels{Job: job.ID, Group: job.TaskGroups[0].Name, Task: "crash"}
	if m.labels[0] != want {
		t.Fatalf("labels %+v, want %+v", m.labels[0], want)
	}
}
