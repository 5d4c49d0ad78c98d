package main

import "github.com/hashicorp/cli"

// PluginCommand groups the plugin subcommands; alone it prints their list.
type PluginCommand struct{ *Meta }

func (c *PluginCommand) Synopsis() string { return "Inspect plugins, or start writing one" }
func (c *PluginCommand) Help() string {
	return helpText(`
Usage: pluginhost plugin <subcommand> [options] [args]

  Inspect the plugins the agent runs (status), or write the Go module of a
  new plugin that is not CSI (init).
`)
}
func (c *PluginCommand) Run([]string) int { return cli.RunResultHelp }
