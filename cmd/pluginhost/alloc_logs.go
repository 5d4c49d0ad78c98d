package main

import (
	"errors"
	"fmt"
)

// AllocLogsCommand prints a task's logs.
type AllocLogsCommand struct {
	*Meta
}

func (c *AllocLogsCommand) Synopsis() string { return "Print (and follow) a task's stdout or stderr" }

func (c *AllocLogsCommand) Help() string {
	return helpText(`
Usage: pluginhost alloc logs [-stderr] [-f] [-escape=BOOL] ALLOC [TASK]

  Print a task's log, oldest rotated file first. TASK may be left out when
  the allocation has one task. ALLOC may be any unique prefix.

Options:

  -stderr
    Print stderr instead of stdout.

  -f
    Follow: keep printing as the task writes, until interrupted.

  -escape
    Show control characters and escape sequences the task wrote as text
    (\x1b]52;...), keeping newlines, tabs, carriage returns and colours.
    On by default when stdout is a terminal, so that a task cannot write
    to your clipboard or redraw your screen; -escape=false prints the log
    byte for byte, as a pipe or file gets it by default.
` + helpAgentOptions)
}

func (c *AllocLogsCommand) Run(args []string) int {
	var stderr, follow, escape bool
	fs := c.flagSet("alloc logs", true, false)
	fs.BoolVar(&stderr, "stderr", false, "")
	fs.BoolVar(&follow, "f", false, "")
	fs.BoolVar(&escape, "escape", isTerminal(c.Out), "")
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
	out := c.Out
	var esc *logEscaper
	if escape {
		esc = &logEscaper{w: c.Out}
		out = esc
	}
	err = client.AllocLogs(c.Ctx, allocID, task, stderr, follow, out)
	if esc != nil {
		err = errors.Join(err, esc.Flush())
	}
	if err != nil {
		return c.fail(fmt.Sprintf("reading logs of allocation %q", allocID), err)
	}
	return 0
}
