package main

import "fmt"

// JobStopCommand stops a job.
type JobStopCommand struct {
	*Meta
}

func (c *JobStopCommand) Synopsis() string { return "Stop a running job" }

func (c *JobStopCommand) Help() string {
	return helpText(`
Usage: pluginhost job stop [-purge] JOB

  Stop every allocation of a job: each task gets its kill_signal, then
  SIGKILL after kill_timeout. CSI plugins deregister on the way down.

Options:

  -purge
    Also forget the job, so that 'job status' no longer lists it.
` + helpAgentOptions)
}

func (c *JobStopCommand) Run(args []string) int {
	var purge bool
	fs := c.flagSet("job stop", true, false)
	fs.BoolVar(&purge, "purge", false, "")
	if !c.parse(fs, args) {
		return 1
	}
	if fs.NArg() != 1 {
		return c.usageError("job stop", "This command takes one argument: the job ID")
	}
	client, err := c.client()
	if err != nil {
		return c.fail("connecting to the agent", err)
	}
	defer client.Close()
	id := fs.Arg(0)
	if err := client.StopJob(c.Ctx, id, purge); err != nil {
		return c.fail(fmt.Sprintf("stopping job %q", id), err)
	}
	what := "stopped"
	if purge {
		what = "stopped and purged"
	}
	c.Ui.Output(fmt.Sprintf("==> %s: Job %q %s", formatTime(c.now()), id, what))
	return 0
}
