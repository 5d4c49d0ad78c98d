package main

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

// Run hands the arguments, unparsed, to the log shipper.
//
// STUB(logmon): becomes `return logmon.Main(args)` once host/logmon is
// committed.
func (c *LogmonCommand) Run(args []string) int {
	c.Ui.Error("pluginhost logmon: not built into this binary yet")
	return 1
}
