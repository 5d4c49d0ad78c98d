package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pluginhost/pluginhost/api"
)

// JobHistoryCommand lists a job's versions, as Nomad's `job history`.
type JobHistoryCommand struct {
	*Meta
}

func (c *JobHistoryCommand) Synopsis() string { return "Show the versions of a job" }

func (c *JobHistoryCommand) Help() string {
	return helpText(`
Usage: pluginhost job history [-json] [-version N] JOB

  List the versions the agent keeps of a job, newest first: every accepted
  change of the job file is a new version, numbered from 0 as in Nomad. The
  last 6 are kept; 'job revert' runs one of them again.

Options:

  -version N
    Show only version N.
` + helpAgentOptions + "\n" + helpReadOptions)
}

func (c *JobHistoryCommand) Run(args []string) int {
	var only string
	fs := c.flagSet("job history", true, true)
	fs.StringVar(&only, "version", "", "")
	if !c.parse(fs, args) {
		return 1
	}
	if fs.NArg() != 1 {
		return c.usageError("job history", "This command takes one argument: the job ID")
	}
	var want *uint64
	if only != "" {
		v, err := strconv.ParseUint(only, 10, 64)
		if err != nil {
			return c.usageError("job history", fmt.Sprintf("-version must be a version number, got %q", only))
		}
		want = &v
	}
	client, err := c.client()
	if err != nil {
		return c.fail("connecting to the agent", err)
	}
	defer client.Close()
	id := fs.Arg(0)
	versions, err := client.JobVersions(c.Ctx, id)
	if err != nil {
		return c.fail(fmt.Sprintf("reading the versions of job %q", id), err)
	}
	if want != nil {
		var kept []*api.Job
		for _, v := range versions {
			if v.Version == *want {
				kept = append(kept, v)
			}
		}
		if len(kept) == 0 {
			c.Ui.Error(fmt.Sprintf("Job %q has no version %d", id, *want))
			return 1
		}
		versions = kept
	}
	if c.json {
		return c.outputJSON(versions)
	}
	blocks := make([]string, 0, len(versions))
	for _, v := range versions {
		kv := []string{
			fmt.Sprintf("Version|%d", v.Version),
			fmt.Sprintf("Stable|%t", v.Stable),
			"Submit Date|" + formatUnixNano(v.SubmitTime),
			"Groups|" + cell(groupCounts(v)),
		}
		if v.Stop {
			kv = append(kv, "Stopped|true")
		}
		blocks = append(blocks, formatKV(kv))
	}
	c.Ui.Output(strings.Join(blocks, "\n\n"))
	return 0
}

// groupCounts is "web×3, db×1": enough to tell versions apart at a glance.
func groupCounts(j *api.Job) string {
	parts := make([]string, 0, len(j.TaskGroups))
	for _, g := range j.TaskGroups {
		parts = append(parts, fmt.Sprintf("%s×%d", g.Name, g.Count))
	}
	return strings.Join(parts, ", ")
}
