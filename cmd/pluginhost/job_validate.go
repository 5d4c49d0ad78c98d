package main

import (
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/host/cgroup"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// JobValidateCommand checks a job file locally.
type JobValidateCommand struct {
	*Meta
}

func (c *JobValidateCommand) Synopsis() string { return "Check a job file without an agent" }

func (c *JobValidateCommand) Help() string {
	return helpText(`
Usage: pluginhost job validate FILE

  Parse and validate a job file here, without contacting an agent: the same
  parser the agent uses, so a file that validates is one the agent accepts
  (unless it names something missing on the agent's machine, or a user the
  agent's denied_host_uids or denied_host_gids refuse). The users tasks run
  as must exist on this machine. Every problem is printed with its
  file:line:col. Exit code 1 if there is any.
`)
}

func (c *JobValidateCommand) Run(args []string) int {
	fs := c.flagSet("job validate", false, false)
	if !c.parse(fs, args) {
		return 1
	}
	if fs.NArg() != 1 {
		return c.usageError("job validate", "This command takes one argument: the job file")
	}
	job, err := jobspec.ParseFile(fs.Arg(0))
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Job validation errors:\n%v", err))
		return 1
	}
	// The users the job names must exist here, supposing this is the
	// agent's machine; the agent's denied_host_uids/gids are checked when
	// it is submitted.
	if err := jobspec.CheckHost(job, jobspec.HostPolicy{LookupUser: jobspec.LookupOSUser}); err != nil {
		c.Ui.Error(fmt.Sprintf("Job validation errors (on this machine):\n%v", err))
		return 1
	}
	c.Ui.Output(fmt.Sprintf("Job validation successful: job %q (%s), %d group(s)", job.ID, job.Type, len(job.TaskGroups)))
	cmdWarnings, cmdNotes := jobspec.CheckCommands(job, taskrunner.ResolveCommand)
	warnings := append(jobspec.Warnings(job), cgroup.Detect(hclog.NewNullLogger(), cgroup.Options{}).Warnings()...)
	for _, w := range append(warnings, cmdWarnings...) {
		c.Ui.Warn("Warning: " + w)
	}
	for _, n := range append(jobspec.Notes(job), cmdNotes...) {
		c.Ui.Output("Note: " + n)
	}
	return 0
}
