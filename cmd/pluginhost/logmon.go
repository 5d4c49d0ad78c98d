package main

import (
	"os"
	"path/filepath"

	"github.com/pluginhost/pluginhost/host/logmon"
)

// LogmonBinary is the standalone log shipper (cmd/pluginhost-logmon) the
// agent prefers when it is installed next to pluginhost.
const LogmonBinary = "pluginhost-logmon"

// NsexecBinary is the standalone mount helper (cmd/pluginhost-nsexec) that
// starts tasks with volumes, preferred in the same way.
const NsexecBinary = "pluginhost-nsexec"

// logmonCommand is how the agent whose binary is exe starts a log shipper:
// LogmonBinary from exe's directory if it is there and executable, since it
// starts several milliseconds faster on every task launch; otherwise this
// binary's hidden logmon subcommand, so a lone pluginhost still works.
func logmonCommand(exe string) []string { return helperCommand(exe, LogmonBinary, "logmon") }

// nsexecCommand is logmonCommand for the mount helper.
func nsexecCommand(exe string) []string { return helperCommand(exe, NsexecBinary, "nsexec") }

func helperCommand(exe, binary, subcommand string) []string {
	standalone := filepath.Join(filepath.Dir(exe), binary)
	if fi, err := os.Stat(standalone); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
		return []string{standalone}
	}
	return []string{exe, subcommand}
}

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
