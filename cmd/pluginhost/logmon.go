package main

import "github.com/pluginhost/pluginhost/host/logmon"

// LogmonCommand is the hidden log shipper the task runner re-executes this
// binary as: it must outlive the agent, so it is its own process.
type LogmonCommand struct {
	*Meta
}

func (c *LogmonCommand) Synopsis() string { return "Internal: ship a task's output to rotated files" }

func (c *LogmonCommand) Help() string {
	return helpText(`
Usage: pluginhost logmon ...

  Internal. The agent starts this for every task; it is not for people.
`)
}

// Run hands the arguments, unparsed, to the log shipper. Its flags are its
// own business, so they are not declared here.
func (c *LogmonCommand) Run(args []string) int {
	return logmon.Main(args)
}
