package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// PluginStatusCommand lists plugins of every type or shows one.
type PluginStatusCommand struct {
	*Meta
}

func (c *PluginStatusCommand) Synopsis() string {
	return "List plugins of every type, or show one plugin's health"
}

func (c *PluginStatusCommand) Help() string {
	return helpText(`
Usage: pluginhost plugin status [-json] [-verbose] [ID | TYPE/NAME]

  Without an argument, list the CSI plugins with their healthy/expected
  counts, then the plugins of every other type (go_plugin tasks whose
  config has a plugin block) with their healthy/expected counts, active
  allocation and socket, also those that allocations declare but that are
  not registered yet (-json: every type, as GET /v1/plugins). With
  TYPE/NAME, show that plugin's registered allocations with their latest
  health check, which one consumers reach, and the declaring allocations
  not registered yet with why. With a CSI plugin's
  ID, show the plugin: provider and version, the plugin's capabilities and
  those of its controller and node services, node info, every allocation
  backing it (several during a rolling update or after a restore) with the
  one in use marked active, when each was last fingerprinted and why it is
  or is not healthy.
` + helpAgentOptions + "\n" + helpReadOptions)
}

func (c *PluginStatusCommand) Run(args []string) int {
	return c.runListOrShow("plugin status", "a plugin ID", args, c.list, c.show)
}

func (c *PluginStatusCommand) list(client *api.Client) int {
	plugins, err := client.AllPlugins(c.Ctx, "")
	if err != nil {
		return c.fail("listing plugins", err)
	}
	if c.json {
		return c.outputJSON(plugins)
	}
	var csiRows, otherRows []string
	for _, p := range plugins {
		if p.CSIPluginListStub != nil {
			q := p.CSIPluginListStub
			csiRows = append(csiRows, fmt.Sprintf("%s|%s|%d/%d|%d/%d", cell(p.ID), cell(q.Provider),
				q.ControllersHealthy, q.ControllersExpected, q.NodesHealthy, q.NodesExpected))
		} else if q := p.PluginListStub; q != nil {
			otherRows = append(otherRows, fmt.Sprintf("%s|%s|%d/%d|%s|%d|%s", cell(p.Type), cell(q.Name),
				q.Healthy, q.Expected, c.shortOrNone(q.ActiveAllocID), q.Instances, cell(q.SocketPath)))
		}
	}
	if len(csiRows) == 0 && len(otherRows) == 0 {
		c.Ui.Output("No plugins")
		return 0
	}
	if len(csiRows) > 0 {
		c.Ui.Output(formatList(append([]string{"ID|Provider|Controllers Healthy/Expected|Nodes Healthy/Expected"}, csiRows...)))
	}
	if len(otherRows) > 0 {
		if len(csiRows) > 0 {
			c.Ui.Output("")
		}
		c.Ui.Output(formatList(append([]string{"Type|Name|Healthy/Expected|Active Allocation|Instances|Socket"}, otherRows...)))
	}
	return 0
}

// showRegistered shows a plugin of any type by TYPE/NAME: its registered
// allocations and those that declare it but have not registered it.
func (c *PluginStatusCommand) showRegistered(client *api.Client, typ, name string) int {
	p, err := client.RegisteredPlugin(c.Ctx, typ, name)
	if errors.Is(err, api.ErrNotFound) {
		c.Ui.Error(fmt.Sprintf("No plugin %s/%s: no allocation runs or declares it", typ, name))
		return 1
	}
	if err != nil {
		return c.fail(fmt.Sprintf("reading plugin %s/%s", typ, name), err)
	}
	if c.json {
		return c.outputJSON(p)
	}
	kv := []string{"Type|" + cell(p.Type), "Name|" + cell(p.Name),
		"Healthy|" + strconv.Itoa(p.Healthy), "Expected|" + strconv.Itoa(p.Expected)}
	if p.Active != nil {
		kv = append(kv, "Active Allocation|"+c.shortOrNone(p.Active.AllocID), "Socket|"+cell(p.Active.SocketPath))
	} else {
		kv = append(kv, "Active Allocation|<none>")
	}
	kv = append(kv, "Target|"+cell(api.ResolverScheme+":///"+p.Type+"/"+p.Name))
	c.Ui.Output(formatKV(kv))
	now := c.now()
	rows := []string{"Allocation ID|Active|Healthy|Last Check|Health Description|Version|Registered|Socket"}
	for _, in := range p.Instances {
		rows = append(rows, fmt.Sprintf("%s|%t|%t|%s|%s|%s|%s|%s", c.shortOrNone(in.AllocID), in.Active, in.Healthy,
			fingerprintAge(now, in.CheckTime), cell(in.HealthDescription), cell(in.Version),
			in.RegisteredAt.Format(time.RFC3339), cell(in.SocketPath)))
	}
	for _, in := range p.Waiting {
		rows = append(rows, fmt.Sprintf("%s|false|false|%s|%s|<none>|<not registered>|<none>", c.shortOrNone(in.AllocID),
			fingerprintAge(now, in.CheckTime), cell(in.HealthDescription)))
	}
	c.Ui.Output("\nAllocations")
	if len(rows) == 1 {
		c.Ui.Output("No allocations")
	} else {
		c.Ui.Output(formatList(rows))
	}
	return 0
}

func (c *PluginStatusCommand) show(client *api.Client, id string) int {
	if typ, name, ok := strings.Cut(id, "/"); ok {
		return c.showRegistered(client, typ, name)
	}
	p, err := client.Plugin(c.Ctx, id)
	if errors.Is(err, api.ErrNotFound) {
		c.Ui.Error(fmt.Sprintf("No CSI plugin with ID %q: no allocation runs or declares it", id))
		return 1
	}
	if err != nil {
		return c.fail(fmt.Sprintf("reading plugin %q", id), err)
	}
	if c.json {
		return c.outputJSON(p)
	}
	c.Ui.Output(formatKV([]string{
		"ID|" + cell(p.ID),
		"Provider|" + cell(p.Provider),
		"Version|" + cell(p.Version),
		"Controllers Healthy|" + strconv.Itoa(p.ControllersHealthy),
		"Controllers Expected|" + strconv.Itoa(p.ControllersExpected),
		"Nodes Healthy|" + strconv.Itoa(p.NodesHealthy),
		"Nodes Expected|" + strconv.Itoa(p.NodesExpected),
		"Active Controller|" + c.shortOrNone(p.ActiveController),
		"Active Node|" + c.shortOrNone(p.ActiveNode),
	}))

	// Capabilities and node info come from the active instances: they are
	// what the agent actually uses. The plugin capabilities describe the
	// driver, not one service, so they get a section of their own rather
	// than being mixed into the service lists (where CONTROLLER_SERVICE
	// among the node's RPCs read as a node capability); a monolith or a
	// split plugin running one image answers the same for both halves,
	// hence the merge.
	ctrl, node := active(p.Controllers, p.ActiveController), active(p.Nodes, p.ActiveNode)
	if ctrl != nil || node != nil {
		var caps []string
		for _, info := range []*api.CSIInfo{ctrl, node} {
			if info != nil {
				caps = append(caps, info.Capabilities...)
			}
		}
		c.Ui.Output("\nPlugin Capabilities")
		c.Ui.Output(capabilityList(caps))
	}
	if ctrl != nil {
		var caps []string
		if ctrl.ControllerInfo != nil {
			caps = ctrl.ControllerInfo.Capabilities
		}
		c.Ui.Output("\nController Capabilities")
		c.Ui.Output(capabilityList(caps))
	}
	if node != nil {
		var caps []string
		if node.NodeInfo != nil {
			caps = node.NodeInfo.Capabilities
		}
		c.Ui.Output("\nNode Capabilities")
		c.Ui.Output(capabilityList(caps))
		if ni := node.NodeInfo; ni != nil {
			c.Ui.Output("\nNode Info")
			c.Ui.Output(formatKV([]string{
				"Node ID|" + cell(ni.ID),
				"Max Volumes|" + maxVolumes(ni.MaxVolumes),
				"Accessible Topology|" + cell(topology(ni.AccessibleTopology)),
			}))
		}
	}

	c.Ui.Output("\nInstances")
	c.Ui.Output(c.instanceTable(p))

	c.Ui.Output("\nAllocations")
	if len(p.Allocations) == 0 {
		c.Ui.Output("No allocations")
	} else {
		c.Ui.Output(c.allocTable(p.Allocations))
	}
	return 0
}

// instanceTable lists every registered allocation of the plugin per type,
// marking the active one: the row to look at when health counts surprise.
func (c *PluginStatusCommand) instanceTable(p *api.CSIPlugin) string {
	now := c.now()
	rows := []string{"Alloc ID|Type|Active|Healthy|Last Fingerprint|Health Description"}
	add := func(kind string, infos map[string]*api.CSIInfo, activeID string) {
		for _, allocID := range slices.Sorted(maps.Keys(infos)) {
			info := infos[allocID]
			rows = append(rows, fmt.Sprintf("%s|%s|%t|%t|%s|%s", c.shortID(allocID), kind, allocID == activeID,
				info.Healthy, fingerprintAge(now, info.UpdateTime), cell(info.HealthDescription)))
		}
	}
	add("controller", p.Controllers, p.ActiveController)
	add("node", p.Nodes, p.ActiveNode)
	if len(rows) == 1 {
		return "No instances registered"
	}
	return formatList(rows)
}

func fingerprintAge(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return ago(now, t)
}

func (c *PluginStatusCommand) shortOrNone(id string) string {
	if id == "" {
		return "<none>"
	}
	return c.shortID(id)
}

func active(infos map[string]*api.CSIInfo, activeID string) *api.CSIInfo {
	if activeID == "" {
		return nil
	}
	return infos[activeID]
}

// capabilityList sorts and de-duplicates a copy, so merged lists from
// several allocations read as one set.
func capabilityList(list []string) string {
	caps := slices.Clone(list)
	slices.Sort(caps)
	caps = slices.Compact(caps)
	if len(caps) == 0 {
		return "  <none>"
	}
	return "  " + strings.Join(caps, "\n  ")
}

func maxVolumes(n int64) string {
	if n <= 0 {
		return "unlimited"
	}
	return strconv.FormatInt(n, 10)
}

func topology(t map[string]string) string {
	parts := make([]string, 0, len(t))
	for _, k := range slices.Sorted(maps.Keys(t)) {
		parts = append(parts, k+"="+t[k])
	}
	return strings.Join(parts, ",")
}
