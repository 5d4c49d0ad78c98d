package main

import (
	"fmt"

	"github.com/pluginhost/pluginhost/api"
)

// VolumeDeleteCommand deletes a volume at its plugin.
type VolumeDeleteCommand struct{ *Meta }

func (c *VolumeDeleteCommand) Synopsis() string { return "Delete a volume at its plugin and forget it" }
func (c *VolumeDeleteCommand) Help() string {
	return helpText(`
Usage: pluginhost volume delete [-detach] VOLUME

  Delete the volume at its plugin (DeleteVolume), then forget it, following
  the work until it is done or has failed.

Options:

  -detach
    Return once the request is recorded.
` + helpAgentOptions)
}

func (c *VolumeDeleteCommand) Run(args []string) int {
	return c.Meta.removeVolume("volume delete", args, false)
}

// VolumeDeregisterCommand forgets a volume, leaving it at the plugin.
type VolumeDeregisterCommand struct{ *Meta }

func (c *VolumeDeregisterCommand) Synopsis() string {
	return "Forget a volume, leaving it at its plugin"
}
func (c *VolumeDeregisterCommand) Help() string {
	return helpText(`
Usage: pluginhost volume deregister [-force] VOLUME

  Forget a volume without deleting it at its plugin.

Options:

  -force
    Release the claims of allocations that have ended (unpublishing and
    unstaging the volume for them) and then deregister. A claim of a
    running allocation refuses the deregistration either way (Nomad's
    -force).
` + helpAgentOptions)
}

func (c *VolumeDeregisterCommand) Run(args []string) int {
	return c.Meta.removeVolume("volume deregister", args, true)
}

func (m *Meta) removeVolume(name string, args []string, deregister bool) int {
	var detach, force bool
	fs := m.flagSet(name, true, false)
	fs.BoolVar(&detach, "detach", false, "")
	if deregister {
		fs.BoolVar(&force, "force", false, "")
	}
	if !m.parse(fs, args) {
		return 1
	}
	if fs.NArg() != 1 {
		return m.usageError(name, "This command takes one argument: the volume ID")
	}
	id := fs.Arg(0)
	return m.followRequest(detach, false, func(client *api.Client) (*api.CSIVolume, error) {
		var v *api.CSIVolume
		var err error
		if deregister {
			v, err = client.DeregisterVolume(m.Ctx, id, force)
		} else {
			v, err = client.DeleteVolume(m.Ctx, id)
		}
		if err != nil {
			return nil, &requestError{fmt.Sprintf("%s %q", name, id), err}
		}
		m.Ui.Output(fmt.Sprintf("==> %s: Volume %q: %s recorded", formatTime(m.now()), v.ID, v.Desired))
		return v, nil
	})
}
