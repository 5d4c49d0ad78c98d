package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/pluginhost/pluginhost/api"
)

// JobRunCommand submits a job file and, unless -detach, follows it.
type JobRunCommand struct {
	*Meta
}

func (c *JobRunCommand) Synopsis() string { return "Run a job file and follow it until its tasks run" }

func (c *JobRunCommand) Help() string {
	return helpText(`
Usage: pluginhost job run [-detach] FILE

  Submit a job file to the agent, which parses it (errors point at
  file:line:col) and starts its allocations. Then follow the job on the
  agent's event stream, printing task events as they happen, until the
  agent has judged the new version, as 'nomad job run' follows a
  deployment: healthy once every task has run for its group's
  min_healthy_time (1s without an update block) and every plugin is
  registered and probed healthy, failed when an allocation fails or misses
  healthy_deadline. A batch task that dies a moment after it started
  fails the run; one that runs on is not waited for: follow it with 'job
  status' or 'events'. Exit code 0 means the version is healthy (or
  already complete); 2 means it failed.

Options:

  -detach
    Return right after the job was accepted, printing the allocation IDs.
` + helpAgentOptions)
}

func (c *JobRunCommand) Run(args []string) int {
	var detach bool
	fs := c.flagSet("job run", true, false)
	fs.BoolVar(&detach, "detach", false, "")
	if !c.parse(fs, args) {
		return 1
	}
	if fs.NArg() != 1 {
		return c.usageError("job run", "This command takes one argument: the job file")
	}
	path := fs.Arg(0)
	src, err := os.ReadFile(path)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading job file: %v", err))
		return 1
	}
	return c.submitAndFollow(detach, "submitting job", func(client *api.Client) (*api.JobRegisterResponse, string, error) {
		resp, err := client.RegisterJobSource(c.Ctx, path, src)
		if err != nil {
			return nil, "", err
		}
		return resp, fmt.Sprintf("Job %q submitted", resp.JobID), nil
	})
}

// submitAndFollow connects, subscribes to the event stream (before
// submitting: the stream is live once Events returns, so no event about the
// new allocations can slip by), submits, prints what submit reports and
// the allocations created, and unless detach follows them.
func (c *JobRunCommand) submitAndFollow(detach bool, doing string,
	submit func(*api.Client) (*api.JobRegisterResponse, string, error)) int {
	client, err := c.client()
	if err != nil {
		return c.fail("connecting to the agent", err)
	}
	defer client.Close()
	var stream *api.EventStream
	if !detach {
		stream, err = client.Events(c.Ctx, api.TopicAllocation, api.TopicTask, api.TopicJob)
		if err != nil {
			return c.fail("subscribing to events", err)
		}
		defer stream.Close()
	}
	resp, what, err := submit(client)
	if err != nil {
		return c.fail(doing, err)
	}
	c.Ui.Output(fmt.Sprintf("==> %s: %s", formatTime(c.now()), what))
	for _, w := range resp.Warnings {
		c.Ui.Warn("    Warning: " + w)
	}
	if len(resp.AllocIDs) > 0 {
		ids := make([]string, len(resp.AllocIDs))
		for i, id := range resp.AllocIDs {
			ids[i] = c.shortID(id)
		}
		c.Ui.Output("    Allocations created: " + strings.Join(ids, ", "))
	}
	if detach {
		return 0
	}
	return c.monitor(client, stream, resp)
}

// monitor follows the job's allocations on the event stream until each has
// settled: running with every task running, or complete, failed or lost.
func (c *JobRunCommand) monitor(client *api.Client, stream *api.EventStream, resp *api.JobRegisterResponse) int {
	ctx := c.Ctx
	m := &jobMonitor{jobID: resp.JobID, allocs: map[string]*api.AllocListStub{}}
	for _, id := range resp.AllocIDs {
		m.allocs[id] = nil
	}
	if len(m.allocs) == 0 {
		// An unchanged re-submission creates nothing: there is no story
		// to follow, only the current state to report.
		current, err := client.JobAllocations(ctx, resp.JobID)
		if err != nil {
			return c.fail("reading allocations", err)
		}
		for _, a := range current {
			if a.DesiredStatus == api.AllocDesiredStatusRun {
				m.allocs[a.ID] = a
			}
		}
		c.Ui.Output(fmt.Sprintf("==> %s: Job %q is unchanged; no new allocations", formatTime(c.now()), resp.JobID))
		if len(m.allocs) == 0 {
			return 0
		}
		return c.summary(m)
	}
	// Every event about the new allocations is on the stream, which was
	// subscribed before registering: follow it alone, so that the user
	// sees each step, including the ones that happened before the
	// register call returned.
	c.Ui.Output(fmt.Sprintf("==> %s: Monitoring %d allocation(s)", formatTime(c.now()), len(m.allocs)))
	for !m.settled() {
		ev, err := stream.Next(ctx)
		switch {
		case errors.Is(err, context.Canceled) || (err != nil && ctx.Err() != nil):
			c.Ui.Output(fmt.Sprintf("==> Stopped following job %q; it keeps running", resp.JobID))
			return 0
		case errors.Is(err, io.EOF):
			c.Ui.Error("Error following job: the agent ended the event stream (is it shutting down?)")
			return 1
		case err != nil:
			return c.fail("following job", err)
		}
		for _, line := range m.apply(ev, c.shortID) {
			c.Ui.Output(fmt.Sprintf("    %s: %s", formatUnixNano(ev.Time), line))
		}
	}
	if code := c.summary(m); code != 0 {
		return code
	}
	return c.followRollout(client, stream, resp)
}

// followRollout waits until the agent has judged the new version's
// roll-out (every task running for min_healthy_time, every plugin
// registered and healthy, or the update failed), like `nomad job run`
// monitoring a deployment: running is not enough, for a plugin that may
// never answer its probes nor for a task the kernel kills a moment after
// it started (a batch job OOM-killed 0.2 s in exited 0 here). Exit code 2
// when the update failed.
func (c *JobRunCommand) followRollout(client *api.Client, stream *api.EventStream, resp *api.JobRegisterResponse) int {
	ctx := c.Ctx
	job, err := client.Job(ctx, resp.JobID)
	if err != nil {
		return c.fail("reading the job", err)
	}
	announced := false
	for {
		if u := job.Update; u != nil && u.Version == resp.Version {
			if u.Status == "failed" {
				c.Ui.Error(fmt.Sprintf("==> %s: Job %q version %d failed: %s", formatTime(c.now()), resp.JobID, u.Version, u.Description))
				return 2
			}
			c.Ui.Output(fmt.Sprintf("==> %s: Job %q version %d is healthy", formatTime(c.now()), resp.JobID, u.Version))
			return 0
		}
		if job.Version != resp.Version {
			c.Ui.Output(fmt.Sprintf("==> Job %q has a newer version (%d) than the one submitted", resp.JobID, job.Version))
			return 0
		}
		if !announced {
			c.Ui.Output(fmt.Sprintf("==> %s: Waiting for version %d to become healthy", formatTime(c.now()), resp.Version))
			announced = true
		}
		ev, err := stream.Next(ctx)
		switch {
		case errors.Is(err, context.Canceled) || (err != nil && ctx.Err() != nil):
			c.Ui.Output(fmt.Sprintf("==> Stopped following job %q; it keeps running", resp.JobID))
			return 0
		case err != nil:
			return c.fail("following job", err)
		}
		if ev.Topic == api.TopicTask && ev.Payload.TaskEvent != nil && slices.Contains(resp.AllocIDs, ev.Payload.AllocID) {
			c.Ui.Output(fmt.Sprintf("    %s: Task %q (alloc %q): %s: %s", formatUnixNano(ev.Time), ev.Payload.TaskName,
				c.shortID(ev.Payload.AllocID), ev.Payload.TaskEvent.Type, ev.Payload.TaskEvent.DisplayMessage))
		}
		if ev.Topic != api.TopicJob || ev.Key != resp.JobID {
			continue
		}
		if job, err = client.Job(ctx, resp.JobID); err != nil {
			return c.fail("reading the job", err)
		}
	}
}

func (c *JobRunCommand) summary(m *jobMonitor) int {
	counts := map[string]int{}
	for _, a := range m.allocs {
		counts[a.ClientStatus]++
	}
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
	}
	c.Ui.Output(fmt.Sprintf("==> %s: Job %q: allocations %s", formatTime(c.now()), m.jobID, strings.Join(parts, ", ")))
	if counts[api.AllocClientStatusFailed]+counts[api.AllocClientStatusLost] > 0 {
		c.Ui.Output(fmt.Sprintf("    Run 'pluginhost job status %s' and 'pluginhost alloc status <id>' for details.", m.jobID))
		return 2
	}
	return 0
}

// jobMonitor is the state job run folds events into.
type jobMonitor struct {
	jobID  string
	allocs map[string]*api.AllocListStub // nil value: not seen yet
}

// apply folds one event in and returns the lines worth printing.
func (m *jobMonitor) apply(ev *api.Event, short func(string) string) []string {
	p := ev.Payload
	switch ev.Topic {
	case api.TopicAllocation:
		a := p.Allocation
		if a == nil || a.JobID != m.jobID {
			return nil
		}
		prev, tracked := m.allocs[a.ID]
		if !tracked && a.DesiredStatus != api.AllocDesiredStatusRun {
			return nil
		}
		m.allocs[a.ID] = a
		switch {
		case !tracked || prev == nil:
			return []string{fmt.Sprintf("Allocation %q (group %q) is %q", short(a.ID), a.TaskGroup, a.ClientStatus)}
		case prev.ClientStatus != a.ClientStatus:
			return []string{fmt.Sprintf("Allocation %q status changed: %q -> %q", short(a.ID), prev.ClientStatus, a.ClientStatus)}
		}
	case api.TopicTask:
		if _, tracked := m.allocs[p.AllocID]; !tracked || p.TaskEvent == nil {
			return nil
		}
		te := p.TaskEvent
		msg := te.DisplayMessage
		if msg == "" {
			msg = te.Type
		} else {
			msg = te.Type + ": " + msg
		}
		return []string{fmt.Sprintf("Task %q (alloc %q): %s", p.TaskName, short(p.AllocID), msg)}
	}
	return nil
}

// settled reports whether every followed allocation has reached a state
// job run stops at.
func (m *jobMonitor) settled() bool {
	for _, a := range m.allocs {
		if a == nil {
			return false
		}
		switch a.ClientStatus {
		case api.AllocClientStatusFailed, api.AllocClientStatusLost, api.AllocClientStatusComplete:
			continue
		case api.AllocClientStatusRunning:
			for _, ts := range a.TaskStates {
				if ts.State != api.TaskStateRunning && !(ts.State == api.TaskStateDead && !ts.Failed) {
					return false
				}
			}
			continue
		}
		return false
	}
	return true
}
