package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pluginhost/pluginhost/api"
)

// JobStatusCommand lists jobs or shows one.
type JobStatusCommand struct {
	*Meta
}

func (c *JobStatusCommand) Synopsis() string { return "List jobs, or show one job and its allocations" }

func (c *JobStatusCommand) Help() string {
	return helpText(`
Usage: pluginhost job status [-json] [-verbose] [JOB]

  Without JOB, list every job. With JOB, show the job, a summary of its
  allocations per task group, and the allocations themselves.
` + helpAgentOptions + "\n" + helpReadOptions)
}

func (c *JobStatusCommand) Run(args []string) int {
	return c.runListOrShow("job status", "a job ID", args, c.list, c.show)
}

func (c *JobStatusCommand) list(client *api.Client) int {
	jobs, err := client.Jobs(c.Ctx)
	if err != nil {
		return c.fail("listing jobs", err)
	}
	if c.json {
		return c.outputJSON(jobs)
	}
	if len(jobs) == 0 {
		c.Ui.Output("No jobs")
		return 0
	}
	rows := []string{"ID|Type|Status|Submit Date"}
	for _, j := range jobs {
		rows = append(rows, fmt.Sprintf("%s|%s|%s|%s", cell(j.ID), cell(j.Type), cell(j.Status), formatUnixNano(j.SubmitTime)))
	}
	c.Ui.Output(formatList(rows))
	return 0
}

// jobStatusJSON is what -json prints for one job: the job and its
// allocations, the two requests the view is made of.
type jobStatusJSON struct {
	Job         *api.Job
	Allocations []*api.AllocListStub
}

func (c *JobStatusCommand) show(client *api.Client, id string) int {
	job, err := client.Job(c.Ctx, id)
	if errors.Is(err, api.ErrNotFound) {
		c.Ui.Error(fmt.Sprintf("No job with ID %q", id))
		return 1
	}
	if err != nil {
		return c.fail(fmt.Sprintf("reading job %q", id), err)
	}
	allocs, err := client.JobAllocations(c.Ctx, job.ID)
	if err != nil {
		return c.fail(fmt.Sprintf("reading allocations of job %q", id), err)
	}
	if c.json {
		return c.outputJSON(jobStatusJSON{Job: job, Allocations: allocs})
	}
	kv := []string{
		"ID|" + cell(job.ID),
		"Name|" + cell(job.Name),
		"Type|" + cell(job.Type),
		fmt.Sprintf("Version|%d", job.Version),
		"Status|" + cell(job.Status),
		"Datacenters|" + cell(strings.Join(job.Datacenters, ",")),
		"Submit Date|" + formatUnixNano(job.SubmitTime),
	}
	if job.SourcePath != "" {
		kv = append(kv, "Source|"+cell(job.SourcePath))
	}
	if job.StatusDescription != "" {
		kv = append(kv, "Description|"+cell(job.StatusDescription))
	}
	if u := job.Update; u != nil {
		kv = append(kv, fmt.Sprintf("Last Update|version %d %s: %s", u.Version, u.Status, cell(u.Description)))
	}
	c.Ui.Output(formatKV(kv))

	if job.JobSummary != nil && len(job.JobSummary.Summary) > 0 {
		c.Ui.Output("\nSummary")
		rows := []string{"Task Group|Queued|Starting|Running|Failed|Complete|Lost"}
		groups := make([]string, 0, len(job.JobSummary.Summary))
		for g := range job.JobSummary.Summary {
			groups = append(groups, g)
		}
		slices.Sort(groups)
		for _, g := range groups {
			s := job.JobSummary.Summary[g]
			rows = append(rows, fmt.Sprintf("%s|%d|%d|%d|%d|%d|%d", cell(g), s.Queued, s.Starting, s.Running, s.Failed, s.Complete, s.Lost))
		}
		c.Ui.Output(formatList(rows))
	}

	c.Ui.Output("\nAllocations")
	if len(allocs) == 0 {
		c.Ui.Output("No allocations placed")
		return 0
	}
	c.Ui.Output(c.allocTable(allocs))
	return 0
}

// allocTable is the allocation table job status and plugin status share.
func (m *Meta) allocTable(allocs []*api.AllocListStub) string {
	now := m.now()
	rows := []string{"ID|Job ID|Version|Task Group|Desired|Status|Created|Modified"}
	for _, a := range allocs {
		rows = append(rows, fmt.Sprintf("%s|%s|%d|%s|%s|%s|%s|%s", m.shortID(a.ID), cell(a.JobID), a.JobVersion, cell(a.TaskGroup),
			cell(a.DesiredStatus), cell(a.ClientStatus), agoNano(now, a.CreateTime), agoNano(now, a.ModifyTime)))
	}
	return formatList(rows)
}
