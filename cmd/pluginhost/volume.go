package main

import "github.com/hashicorp/cli"

// VolumeCommand groups the volume subcommands; alone it prints their list.
type VolumeCommand struct{ *Meta }

func (c *VolumeCommand) Synopsis() string { return "Create, register, inspect and delete CSI volumes" }
func (c *VolumeCommand) Help() string {
	return helpText(`
Usage: pluginhost volume <subcommand> [options] [args]

  Work with CSI volumes, as Nomad's 'volume' commands do: write an example
  specification (init), create or register a volume from one, see volumes
  (status), take and list snapshots, delete or deregister volumes.
`)
}
func (c *VolumeCommand) Run([]string) int { return cli.RunResultHelp }

// VolumeSnapshotCommand groups the snapshot subcommands.
type VolumeSnapshotCommand struct{ *Meta }

func (c *VolumeSnapshotCommand) Synopsis() string { return "Create, list and delete volume snapshots" }
func (c *VolumeSnapshotCommand) Help() string {
	return helpText(`
Usage: pluginhost volume snapshot <create|list|delete> [options] [args]
`)
}
func (c *VolumeSnapshotCommand) Run([]string) int { return cli.RunResultHelp }
