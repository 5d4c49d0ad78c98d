package main

import (
	"fmt"
	"strconv"

	"github.com/pluginhost/pluginhost/api"
)

// JobRevertCommand runs an earlier version of a job again.
type JobRevertCommand struct {
	*JobRunCommand
}

func (c *JobRevertCommand) Synopsis() string { return "Revert a job to an earlier version" }

func (c *JobRevertCommand) Help() string {
	return helpText(`
Usage: pluginhost job revert [-detach] JOB VERSION

  Submit version VERSION of a job (see 'job history') again. As in Nomad,
  the revert is itself a new version: the allocations of the current one
  stop once the reverted ones run. Then follow the job like 'job run'.

Options:

  -detach
    Return right after the revert was accepted.
` + helpAgentOptions)
}

func (c *JobRevertCommand) Run(args []string) int {
	var detach bool
	fs := c.flagSet("job revert", true, false)
	fs.BoolVar(&detach, "detach", false, "")
	if !c.parse(fs, args) {
		return 1
	}
	if fs.NArg() != 2 {
		return c.usageError("job revert", "This command takes two arguments: the job ID and the version")
	}
	id := fs.Arg(0)
	version, err := strconv.ParseUint(fs.Arg(1), 10, 64)
	if err != nil {
		return c.usageError("job revert", fmt.Sprintf("VERSION must be a version number, got %q", fs.Arg(1)))
	}
	return c.submitAndFollow(detach, fmt.Sprintf("reverting job %q to version %d", id, version),
		func(client *api.Client) (*api.JobRegisterResponse, string, error) {
			resp, err := client.RevertJob(c.Ctx, id, version)
			if err != nil {
				return nil, "", err
			}
			return resp, fmt.Sprintf("Job %q reverted to version %d", resp.JobID, version), nil
		})
}
