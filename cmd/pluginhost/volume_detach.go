package main

import (
	"fmt"

	"github.com/pluginhost/pluginhost/api"
)

// VolumeDetachCommand releases the claims of ended allocations on a volume.
type VolumeDetachCommand struct{ *Meta }

func (c *VolumeDetachCommand) Synopsis() string {
	return "Release a volume's claims held by allocations that ended"
}

func (c *VolumeDetachCommand) Help() string {
	return helpText(`
Usage: pluginhost volume detach VOLUME [NODE]

  Unpublish and unstage the volume for every allocation that has ended but
  still holds a claim on it, and forget those claims; waits until done.
  The agent does this on its own within a pass of its volume reconciler;
  this command does it now and says when it is over. Claims of running
  allocations are left alone: stop the allocation to release its claim.

  NODE is accepted for Nomad's command line; it must be this agent's node
  name.
` + helpAgentOptions)
}

func (c *VolumeDetachCommand) Run(args []string) int {
	fs := c.flagSet("volume detach", true, false)
	if !c.parse(fs, args) {
		return 1
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return c.usageError("volume detach", "This command takes the volume ID and, optionally, the node")
	}
	id := fs.Arg(0)
	client, err := c.client()
	if err != nil {
		return c.fail("connecting to the agent", err)
	}
	defer client.Close()
	if fs.NArg() == 2 {
		self, err := client.Self(c.Ctx)
		if err != nil {
			return c.fail("reading the agent's node", err)
		}
		if node := fs.Arg(1); node != self.NodeName {
			return c.usageError("volume detach", fmt.Sprintf("node %q is not this agent's (%s)", node, self.NodeName))
		}
	}
	before, err := client.Volume(c.Ctx, id)
	if err != nil {
		return c.fail(fmt.Sprintf("reading volume %q", id), err)
	}
	v, err := client.DetachVolume(c.Ctx, id)
	if err != nil {
		return c.fail(fmt.Sprintf("detaching volume %q", id), err)
	}
	released := len(before.Claims) - len(v.Claims)
	c.Ui.Output(fmt.Sprintf("Volume %q: %d claim(s) released, %d held by running allocations", v.ID, max(released, 0), liveClaimCount(v)))
	return 0
}

func liveClaimCount(v *api.CSIVolume) int { return v.CurrentReaders + v.CurrentWriters }
