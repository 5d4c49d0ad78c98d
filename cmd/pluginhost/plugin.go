package main

import "github.com/hashicorp/cli"

// PluginCommand groups the plugin subcommands; alone it prints their list.
type PluginCommand struct{ *Meta }

func (c *PluginCommand) Synopsis() string { return "Inspect CSI plugins" }
func (c *PluginCommand) Help() string {
	return helpText(`
Usage: pluginhost plugin <subcommand> [options] [args]

  Inspect the CSI plugins the agent runs and fingerprints.
`)
}
func (c *PluginCommand) Run([]string) int { return cli.RunResultHelp }
