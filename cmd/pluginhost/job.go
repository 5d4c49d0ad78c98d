package main

import "github.com/hashicorp/cli"

// JobCommand groups the job subcommands; alone it prints their list.
type JobCommand struct{ *Meta }

func (c *JobCommand) Synopsis() string { return "Run, stop, inspect and validate jobs" }
func (c *JobCommand) Help() string {
	return helpText(`
Usage: pluginhost job <subcommand> [options] [args]

  Work with jobs: run a job file, follow it, see its status, stop it, or
  check a job file without an agent.
`)
}
func (c *JobCommand) Run([]string) int { return cli.RunResultHelp }
