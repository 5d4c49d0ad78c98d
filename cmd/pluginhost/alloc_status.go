package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pluginhost/pluginhost/api"
)

// AllocStatusCommand shows one allocation.
type AllocStatusCommand struct {
	*Meta
}

func (c *AllocStatusCommand) Synopsis() string {
	return "Show an allocation, its tasks and their events"
}

func (c *AllocStatusCommand) Help() string {
	return helpText(`
Usage: pluginhost alloc status [-json] [-verbose] [-stats] ALLOC

  Show an allocation and, for each task, its state, restarts, resources
  (with what a running task uses now, from its cgroup: "12/100 MHz",
  "24 MiB/300 MiB", and its processes and threads against the agent's
  pids_limit, "3/2048") and recent events (newest first; -verbose shows
  them all). ALLOC may be any unique prefix of the allocation ID.
` + helpAgentOptions + "\n" + helpReadOptions + `

  -stats
    Also print each running task's detailed Memory Stats and CPU Stats,
    the fields its cgroup measures, as Nomad's alloc status -stats does.`)
}

// recentEvents is how many task events the view shows without -verbose,
// as in Nomad.
const recentEvents = 10

func (c *AllocStatusCommand) Run(args []string) int {
	fs := c.flagSet("alloc status", true, true)
	var showStats bool
	fs.BoolVar(&showStats, "stats", false, "")
	if !c.parse(fs, args) {
		return 1
	}
	if fs.NArg() != 1 {
		return c.usageError("alloc status", "This command takes one argument: the allocation ID")
	}
	client, err := c.client()
	if err != nil {
		return c.fail("connecting to the agent", err)
	}
	defer client.Close()
	a, err := client.Allocation(c.Ctx, fs.Arg(0))
	if err != nil {
		return c.fail(fmt.Sprintf("reading allocation %q", fs.Arg(0)), err)
	}
	if c.json {
		return c.outputJSON(a)
	}
	usage := c.allocUsage(client, a, showStats)
	now := c.now()
	c.Ui.Output(formatKV([]string{
		"ID|" + c.shortID(a.ID),
		"Name|" + cell(a.Name),
		"Job ID|" + cell(a.JobID),
		"Task Group|" + cell(a.TaskGroup),
		"Client Status|" + cell(a.ClientStatus),
		"Client Description|" + cell(a.ClientDescription),
		"Desired Status|" + cell(a.DesiredStatus),
		"Desired Description|" + cell(a.DesiredDescription),
		"Created|" + agoNano(now, a.CreateTime),
		"Modified|" + agoNano(now, a.ModifyTime),
		"Alloc Dir|" + cell(a.AllocDir),
	}))
	if len(a.Volumes) > 0 {
		c.Ui.Output("\nCSI Volumes:")
		rows := []string{"ID|Plugin|Read Only|Claim State|Progress"}
		for _, v := range a.Volumes {
			state, progress := "none", ""
			if v.Claim != nil {
				state = v.Claim.Desired + "/" + v.Claim.State
				progress = claimProgress(v.Claim)
			}
			rows = append(rows, strings.Join([]string{cell(v.VolumeID), cell(v.PluginID), strconv.FormatBool(v.ReadOnly),
				state, cell(progress)}, "|"))
		}
		c.Ui.Output(formatList(rows))
	}
	for _, name := range taskOrder(a) {
		ts := a.TaskStates[name]
		if ts == nil {
			c.Ui.Output(fmt.Sprintf("\nTask %q has no state yet", name))
			continue
		}
		c.Ui.Output(fmt.Sprintf("\nTask %q is %q", name, ts.State))
		c.Ui.Output(formatKV([]string{
			"Started At|" + formatTime(ts.StartedAt),
			"Finished At|" + formatTime(ts.FinishedAt),
			"Failed|" + strconv.FormatBool(ts.Failed),
			"Total Restarts|" + strconv.FormatUint(ts.Restarts, 10),
			"Last Restart|" + formatTime(ts.LastRestart),
		}))
		var tu *api.TaskResourceUsage
		if usage != nil {
			tu = usage.Tasks[name]
		}
		if t := taskResources(a.TaskResources[name], tu); t != "" {
			c.Ui.Output("\n" + t)
		}
		if showStats && tu != nil {
			if t := detailedUsage(tu.ResourceUsage); t != "" {
				c.Ui.Output("\n" + t)
			}
		}
		c.Ui.Output("\nRecent Events:")
		c.Ui.Output(c.eventTable(ts.Events))
	}
	return 0
}

// allocUsage reads what the allocation's running tasks use, when one is
// running. The view is still worth printing without it (an agent without
// cgroups, an older agent), so a failure is a warning; with -stats, which
// asked for it, the warning names the error.
func (c *AllocStatusCommand) allocUsage(client *api.Client, a *api.Allocation, asked bool) *api.AllocResourceUsage {
	running := false
	for _, ts := range a.TaskStates {
		running = running || (ts != nil && ts.State == api.TaskStateRunning)
	}
	if !running {
		return nil
	}
	usage, err := client.AllocStats(c.Ctx, a.ID)
	if err != nil {
		if asked {
			c.Ui.Warn(fmt.Sprintf("Couldn't retrieve stats: %v", err))
		}
		return nil
	}
	return usage
}

// taskOrder lists tasks in spec order, then any that only have state.
func taskOrder(a *api.Allocation) []string {
	out := slices.Clone(a.Tasks)
	var extra []string
	for name := range a.TaskStates {
		if !slices.Contains(out, name) {
			extra = append(extra, name)
		}
	}
	slices.Sort(extra)
	return append(out, extra...)
}

func (c *AllocStatusCommand) eventTable(events []*api.TaskEvent) string {
	rows := []string{"Time|Type|Description"}
	n := 0
	for i := len(events) - 1; i >= 0; i-- {
		if !c.verbose && n == recentEvents {
			break
		}
		e := events[i]
		rows = append(rows, fmt.Sprintf("%s|%s|%s", formatUnixNano(e.Time), cell(e.Type), cell(describeTaskEvent(e))))
		n++
	}
	return formatList(rows)
}

// describeTaskEvent is the event's message, with the exit code or signal
// for terminations the agent did not already spell out.
func describeTaskEvent(e *api.TaskEvent) string {
	msg := e.DisplayMessage
	if e.Type == api.TaskTerminated && msg == "" {
		msg = fmt.Sprintf("Exit Code: %d", e.ExitCode)
		if e.Signal != 0 {
			msg += fmt.Sprintf(", Signal: %d", e.Signal)
		}
	}
	return msg
}
