package main

import (
	"context"

	"github.com/hashicorp/cli"
)

// AgentCommand runs the agent.
type AgentCommand struct {
	*Meta
}

func (c *AgentCommand) Synopsis() string { return "Run the pluginhost agent" }

func (c *AgentCommand) Help() string {
	return helpText(`
Usage: pluginhost agent [-config FILE | -dev]

  Run the agent in the foreground. It serves the HTTP API, runs the job
  files listed in its configuration, and re-attaches to the plugins a
  previous run left behind (also after kill -9). SIGINT or SIGTERM stop
  the agent; plugins keep running and are adopted by the next agent.

Options:

  -config=<file>
    The agent configuration file (HCL). Required unless -dev.

  -dev
    Run with a temporary data dir and debug logging, for trying things out.
`)
}

func (c *AgentCommand) Run(args []string) int {
	var cfgPath string
	var dev bool
	fs := c.flagSet("agent", false, false)
	fs.StringVar(&cfgPath, "config", "", "")
	fs.BoolVar(&dev, "dev", false, "")
	if !c.parse(fs, args) {
		return 1
	}
	if fs.NArg() != 0 {
		return c.usageError("agent", "This command takes no arguments")
	}
	if cfgPath == "" && !dev {
		return c.usageError("agent", "Either -config FILE or -dev is required")
	}
	return runAgent(c.Ctx, cfgPath, dev, c.Ui)
}

// runAgent builds the agent from its configuration, serves the API and
// blocks until ctx ends; it returns the process exit code.
//
// STUB(lead): the lead engineer fills this in with host.NewAgent(...) and
// api.NewServer(api.ServerConfig{Addr: cfg.Addr, Backend: agent, Logger: log}).
// Until then the binary cannot run an agent.
func runAgent(ctx context.Context, cfgPath string, dev bool, ui cli.Ui) int {
	_ = ctx
	_, _ = cfgPath, dev
	ui.Error("pluginhost: the agent is not built yet (runAgent in cmd/pluginhost/agent.go is a stub)")
	return 1
}
