package main

import "github.com/hashicorp/cli"

// AllocCommand groups the alloc subcommands; alone it prints their list.
type AllocCommand struct{ *Meta }

func (c *AllocCommand) Synopsis() string { return "Inspect allocations and read their logs" }
func (c *AllocCommand) Help() string {
	return helpText(`
Usage: pluginhost alloc <subcommand> [options] [args]

  Inspect an allocation (an instance of a task group) and read its tasks'
  logs. Allocation IDs may be shortened to any unique prefix.
`)
}
func (c *AllocCommand) Run([]string) int { return cli.RunResultHelp }
