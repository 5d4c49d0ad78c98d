package main

import (
	"fmt"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/volumespec"
)

// VolumeSnapshotCreateCommand snapshots a volume.
type VolumeSnapshotCreateCommand struct{ *Meta }

func (c *VolumeSnapshotCreateCommand) Synopsis() string { return "Snapshot a volume" }
func (c *VolumeSnapshotCreateCommand) Help() string {
	return helpText(`
Usage: pluginhost volume snapshot create [-json] VOLUME [NAME]

  Take a snapshot of VOLUME through its plugin (CreateSnapshot; NAME is the
  idempotency key, "<volume>-<unix nanoseconds>" by default).
` + helpAgentOptions)
}

func (c *VolumeSnapshotCreateCommand) Run(args []string) int {
	fs := c.flagSet("volume snapshot create", true, true)
	if !c.parse(fs, args) {
		return 1
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return c.usageError("volume snapshot create", "This command takes a volume ID and an optional snapshot name")
	}
	client, err := c.client()
	if err != nil {
		return c.fail("connecting to the agent", err)
	}
	defer client.Close()
	s, err := client.CreateSnapshot(c.Ctx, fs.Arg(0), fs.Arg(1))
	if err != nil {
		return c.fail(fmt.Sprintf("snapshotting volume %q", fs.Arg(0)), err)
	}
	if c.json {
		return c.outputJSON(s)
	}
	c.Ui.Output(snapshotTable([]*api.CSISnapshot{s}))
	return 0
}

// VolumeSnapshotListCommand lists a plugin's snapshots.
type VolumeSnapshotListCommand struct{ *Meta }

func (c *VolumeSnapshotListCommand) Synopsis() string { return "List a plugin's snapshots" }
func (c *VolumeSnapshotListCommand) Help() string {
	return helpText(`
Usage: pluginhost volume snapshot list [-json] [-plugin ID]

  List the snapshots of a plugin (ListSnapshots); without -plugin, of every
  CSI plugin that can list them.

Options:

  -plugin ID
    Only this plugin's snapshots.
` + helpAgentOptions + "\n" + helpReadOptions)
}

func (c *VolumeSnapshotListCommand) Run(args []string) int {
	var plugin string
	fs := c.flagSet("volume snapshot list", true, true)
	fs.StringVar(&plugin, "plugin", "", "")
	if !c.parse(fs, args) {
		return 1
	}
	if fs.NArg() != 0 {
		return c.usageError("volume snapshot list", "This command takes no arguments")
	}
	client, err := c.client()
	if err != nil {
		return c.fail("connecting to the agent", err)
	}
	defer client.Close()
	plugins := []string{plugin}
	if plugin == "" {
		ps, err := client.Plugins(c.Ctx)
		if err != nil {
			return c.fail("listing plugins", err)
		}
		plugins = plugins[:0]
		for _, p := range ps {
			plugins = append(plugins, p.ID)
		}
	}
	var all []*api.CSISnapshot
	for _, p := range plugins {
		snaps, err := client.ListSnapshots(c.Ctx, p)
		if err != nil {
			if plugin != "" {
				return c.fail(fmt.Sprintf("listing snapshots of plugin %q", p), err)
			}
			continue // a plugin that cannot list snapshots has none to show
		}
		all = append(all, snaps...)
	}
	if c.json {
		return c.outputJSON(all)
	}
	if len(all) == 0 {
		c.Ui.Output("No snapshots")
		return 0
	}
	c.Ui.Output(snapshotTable(all))
	return 0
}

// VolumeSnapshotDeleteCommand deletes a snapshot.
type VolumeSnapshotDeleteCommand struct{ *Meta }

func (c *VolumeSnapshotDeleteCommand) Synopsis() string { return "Delete a snapshot" }
func (c *VolumeSnapshotDeleteCommand) Help() string {
	return helpText(`
Usage: pluginhost volume snapshot delete PLUGIN SNAPSHOT

  Delete SNAPSHOT through PLUGIN (DeleteSnapshot). An unknown snapshot is
  not an error: the spec calls that done.
` + helpAgentOptions)
}

func (c *VolumeSnapshotDeleteCommand) Run(args []string) int {
	fs := c.flagSet("volume snapshot delete", true, false)
	if !c.parse(fs, args) {
		return 1
	}
	if fs.NArg() != 2 {
		return c.usageError("volume snapshot delete", "This command takes two arguments: the plugin ID and the snapshot ID")
	}
	client, err := c.client()
	if err != nil {
		return c.fail("connecting to the agent", err)
	}
	defer client.Close()
	if err := client.DeleteSnapshot(c.Ctx, fs.Arg(0), fs.Arg(1)); err != nil {
		return c.fail(fmt.Sprintf("deleting snapshot %q", fs.Arg(1)), err)
	}
	c.Ui.Output(fmt.Sprintf("Deleted snapshot %s.", fs.Arg(1)))
	return 0
}

func snapshotTable(snaps []*api.CSISnapshot) string {
	rows := []string{"Snapshot ID|Volume ID|External Volume ID|Plugin ID|Size|Create Time|Ready?"}
	for _, s := range snaps {
		created := "-"
		if s.CreateTime != 0 {
			created = formatUnixNano(s.CreateTime)
		}
		rows = append(rows, fmt.Sprintf("%s|%s|%s|%s|%s|%s|%t", cell(s.ID), cell(s.SourceVolumeID), cell(s.ExternalSourceVolumeID),
			cell(s.PluginID), volumespec.FormatBytes(s.SizeBytes), created, s.IsReady))
	}
	return formatList(rows)
}
