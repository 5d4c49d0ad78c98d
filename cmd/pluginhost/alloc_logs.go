package main

import "fmt"

// AllocLogsCommand prints a task's logs.
type AllocLogsCommand struct {
	*Meta
}

func (c *AllocLogsCommand) Synopsis() string { return "Print (and follow) a task's stdout or stderr" }

func (c *AllocLogsCommand) Help() string {
	return helpText(`
Usage: pluginhost alloc logs [-stderr] [-f] ALLOC [TASK]

  Print a task's log, oldest rotated file first. TASK may be left out when
  the allocation has one task. ALLOC may be any unique prefix.

Options:

  -stderr
    Print stderr instead of stdout.

  -f
    Follow: keep printing as the task writes, until interrupted.
` + helpAgentOptions)
}

func (c *AllocLogsCommand) Run(args []string) int {
	var stderr, follow bool
	fs := c.flagSet("alloc logs", true, false)
	fs.BoolVar(&stderr, "stderr", false, "")
	fs.BoolVar(&follow, "f", false, "")
	if !c.parse(fs, args) {
		return 1
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return c.usageError("alloc logs", "This command takes one or two arguments: ALLOC [TASK]")
	}
	client, err := c.client()
	if err != nil {
		return c.fail("connecting to the agent", err)
	}
	defer client.Close()
	allocID, task := fs.Arg(0), fs.Arg(1)
	if err := client.AllocLogs(c.Ctx, allocID, task, stderr, follow, c.Out); err != nil {
		return c.fail(fmt.Sprintf("reading logs of allocation %q", allocID), err)
	}
	return 0
}
