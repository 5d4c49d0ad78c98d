package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/volumespec"
)

// VolumeStatusCommand lists volumes or shows one.
type VolumeStatusCommand struct{ *Meta }

func (c *VolumeStatusCommand) Synopsis() string { return "List volumes, or show one volume" }
func (c *VolumeStatusCommand) Help() string {
	return helpText(`
Usage: pluginhost volume status [-json] [-verbose] [-plugin ID] [VOLUME]

  Without VOLUME, list the volumes (of one plugin with -plugin); with
  -verbose also the volumes each plugin reports that are not registered
  (ListVolumes). With VOLUME, show it: capacity, capabilities, topology,
  the plugin's context, and while work is pending its progress, the last
  error and the attempt count.

Options:

  -plugin ID
    Only the volumes of this plugin.
` + helpAgentOptions + "\n" + helpReadOptions)
}

func (c *VolumeStatusCommand) Run(args []string) int {
	var plugin string
	fs := c.flagSet("volume status", true, true)
	fs.StringVar(&plugin, "plugin", "", "")
	if !c.parse(fs, args) {
		return 1
	}
	if fs.NArg() > 1 {
		return c.usageError("volume status", "This command takes at most one argument: a volume ID")
	}
	client, err := c.client()
	if err != nil {
		return c.fail("connecting to the agent", err)
	}
	defer client.Close()
	if fs.NArg() == 1 {
		return c.show(client, fs.Arg(0))
	}
	return c.list(client, plugin)
}

func (c *VolumeStatusCommand) list(client *api.Client, plugin string) int {
	vols, err := client.Volumes(c.Ctx, plugin)
	if err != nil {
		return c.fail("listing volumes", err)
	}
	var external map[string][]*api.CSIVolumeExternalStub
	if c.verbose {
		external = c.externalVolumes(client, plugin, vols)
	}
	if c.json {
		if c.verbose {
			return c.outputJSON(struct {
				Volumes  []*api.CSIVolumeListStub
				External map[string][]*api.CSIVolumeExternalStub
			}{vols, external})
		}
		return c.outputJSON(vols)
	}
	if len(vols) == 0 {
		c.Ui.Output("No CSI volumes")
	} else {
		c.Ui.Output("Container Storage Interface")
		rows := []string{"ID|Name|Plugin ID|Schedulable|Access Mode|Capacity|State"}
		for _, v := range vols {
			state := v.State
			if v.State != api.VolumeStateReady && v.StateDescription != "" {
				state += " (" + v.StateDescription + ")"
			}
			rows = append(rows, fmt.Sprintf("%s|%s|%s|%t|%s|%s|%s", cell(v.ID), cell(v.Name), cell(v.PluginID), v.Schedulable,
				cell(strings.Join(v.AccessModes, ",")), volumespec.FormatBytes(v.Capacity), cell(state)))
		}
		c.Ui.Output(formatList(rows))
	}
	for _, p := range slices.Sorted(maps.Keys(external)) {
		var rows []string
		for _, e := range external[p] {
			if e.VolumeID == "" {
				rows = append(rows, fmt.Sprintf("%s|%s|%s", cell(e.ExternalID), volumespec.FormatBytes(e.CapacityBytes),
					cell(strings.Join(e.PublishedExternalNodeIDs, ","))))
			}
		}
		if len(rows) == 0 {
			continue
		}
		c.Ui.Output(fmt.Sprintf("\nVolumes of plugin %s not registered", p))
		c.Ui.Output(formatList(append([]string{"External ID|Capacity|Published Nodes"}, rows...)))
	}
	return 0
}

// externalVolumes asks each plugin of interest for its volumes; a plugin
// that cannot list them is skipped with a warning.
func (c *VolumeStatusCommand) externalVolumes(client *api.Client, plugin string, vols []*api.CSIVolumeListStub) map[string][]*api.CSIVolumeExternalStub {
	plugins := map[string]bool{}
	if plugin != "" {
		plugins[plugin] = true
	} else if ps, err := client.Plugins(c.Ctx); err == nil {
		for _, p := range ps {
			plugins[p.ID] = true
		}
	}
	out := map[string][]*api.CSIVolumeExternalStub{}
	for _, p := range slices.Sorted(maps.Keys(plugins)) {
		ext, err := client.ExternalVolumes(c.Ctx, p)
		if err != nil {
			c.Ui.Warn(fmt.Sprintf("Plugin %s: cannot list its volumes: %v", p, err))
			continue
		}
		out[p] = ext
	}
	return out
}

func (c *VolumeStatusCommand) show(client *api.Client, id string) int {
	v, err := client.Volume(c.Ctx, id)
	if err != nil {
		return c.fail(fmt.Sprintf("reading volume %q", id), err)
	}
	if c.json {
		return c.outputJSON(v)
	}
	kv := []string{
		"ID|" + cell(v.ID),
		"Name|" + cell(v.Name),
		"External ID|" + cell(v.ExternalID),
		"Plugin ID|" + cell(v.PluginID),
		"Provider|" + cell(v.Provider),
		"Capacity|" + volumespec.FormatBytes(v.Capacity),
		fmt.Sprintf("Schedulable|%t", v.Schedulable),
		fmt.Sprintf("Controllers Healthy|%d", v.ControllersHealthy),
		fmt.Sprintf("Controllers Expected|%d", v.ControllersExpected),
		fmt.Sprintf("Nodes Healthy|%d", v.NodesHealthy),
		fmt.Sprintf("Nodes Expected|%d", v.NodesExpected),
		"Origin|" + cell(v.Origin),
		"State|" + cell(v.State),
		fmt.Sprintf("Readers|%d", v.CurrentReaders),
		fmt.Sprintf("Writers|%d", v.CurrentWriters),
	}
	if v.State != api.VolumeStateReady || v.Desired != "present" {
		kv = append(kv, "Desired|"+cell(v.Desired), "Progress|"+cell(v.StateDescription))
	}
	if v.Attempts > 0 || v.LastError != "" {
		kv = append(kv, fmt.Sprintf("Attempts|%d", v.Attempts), "Last Error|"+cell(v.LastError))
	}
	if v.RequestedCapacityMin > 0 || v.RequestedCapacityMax > 0 {
		kv = append(kv, fmt.Sprintf("Requested Capacity|%s to %s", volumespec.FormatBytes(v.RequestedCapacityMin),
			volumespec.FormatBytes(v.RequestedCapacityMax)))
	}
	if mo := v.MountOptions; mo != nil {
		kv = append(kv, fmt.Sprintf("Mount Options|fs_type: %s flags: %s", cell(mo.FSType), cell(strings.Join(mo.MountFlags, ","))))
	}
	c.Ui.Output(formatKV(kv))

	c.Ui.Output("\nCapabilities")
	rows := []string{"Access Mode|Attachment Mode"}
	for _, cp := range v.RequestedCapabilities {
		rows = append(rows, cell(cp.AccessMode)+"|"+cell(cp.AttachmentMode))
	}
	c.Ui.Output(formatList(rows))
	if len(v.Topologies) > 0 {
		c.Ui.Output("\nTopologies")
		rows := []string{"Topology|Segments"}
		for i, t := range v.Topologies {
			rows = append(rows, fmt.Sprintf("%02d|%s", i, cell(segments(t.Segments))))
		}
		c.Ui.Output(formatList(rows))
	}
	if len(v.Context) > 0 {
		c.Ui.Output("\nContext")
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(v.Context)) {
			kv = append(kv, cell(k)+"|"+cell(v.Context[k]))
		}
		c.Ui.Output(formatKV(kv))
	}
	c.Ui.Output("\nAllocations")
	if len(v.Claims) == 0 {
		c.Ui.Output("No allocations placed")
		return 0
	}
	rows = []string{"Alloc ID|Job ID|Task Group|Mode|Desired|State|Progress"}
	for _, cl := range v.Claims {
		rows = append(rows, strings.Join([]string{c.shortID(cl.AllocID), cell(cl.JobID), cell(cl.TaskGroup), cl.Mode,
			cl.Desired, cl.State, cell(claimProgress(cl))}, "|"))
	}
	c.Ui.Output(formatList(rows))
	return 0
}

// claimProgress is a claim's description with its last error, if any.
func claimProgress(cl *api.CSIVolumeClaim) string {
	if cl.LastError != "" {
		return fmt.Sprintf("%s (attempt %d: %s)", cl.StateDescription, cl.Attempts, cl.LastError)
	}
	return cl.StateDescription
}

func segments(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ", ")
}
