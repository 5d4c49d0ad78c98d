package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/pluginhost/pluginhost/api"
)

// EventsCommand prints the agent's live event stream.
type EventsCommand struct {
	*Meta
}

func (c *EventsCommand) Synopsis() string { return "Print the agent's live events" }

func (c *EventsCommand) Help() string {
	return helpText(`
Usage: pluginhost events [-json] [-n N] [-index N] [-topic TOPIC]...

  Print the agent's recent events, then events as they happen until
  interrupted: task events, allocation updates, plugin registrations and
  health changes, job updates, volumes.

Options:

  -n=<N>
    How many of the agent's latest events to print first (default 10), of
    the topics asked for; 0 prints only what happens from now on.

  -topic=<topic>
    Only this topic (Allocation, Task, Job, Plugin, Registry, Agent,
    Volume); may be given more than once.

  -index=<N>
    Start with the events after index N that the agent still keeps (the
    last 4096), as Nomad's event stream does: a reader that was cut off
    resumes where it left. A reader that falls 4096 events behind is told
    so and disconnected (exit code 1), never dropped silently.
` + helpAgentOptions + "\n" + helpReadOptions)
}

// topicFlags collects repeated -topic flags.
type topicFlags []string

func (t *topicFlags) String() string     { return strings.Join(*t, ",") }
func (t *topicFlags) Set(v string) error { *t = append(*t, v); return nil }

func (c *EventsCommand) Run(args []string) int {
	var (
		topics topicFlags
		index  uint64
		last   uint64
	)
	fs := c.flagSet("events", true, true)
	fs.Var(&topics, "topic", "")
	fs.Uint64Var(&index, "index", 0, "")
	fs.Uint64Var(&last, "n", 10, "")
	if !c.parse(fs, args) {
		return 1
	}
	if fs.NArg() != 0 {
		return c.usageError("events", "This command takes no arguments")
	}
	client, err := c.client()
	if err != nil {
		return c.fail("connecting to the agent", err)
	}
	defer client.Close()
	open := client.EventsFrom
	if index == 0 && last > 0 {
		// The last N: from the agent's latest index back. A quiet agent
		// printed nothing at all before, which looked like a hang.
		self, err := client.Self(c.Ctx)
		if err != nil {
			return c.fail("reading the agent's event index", err)
		}
		index, open = max(self.EventIndex, last)-last, client.EventsSince
	}
	stream, err := open(c.Ctx, index, topics...)
	if err != nil {
		return c.fail("subscribing to events", err)
	}
	defer stream.Close()
	if !c.json {
		c.Ui.Output(strings.TrimRight(fmt.Sprintf("%-20s  %-10s  %-20s  %-8s  %s", "Time", "Topic", "Type", "Key", "Details"), " "))
	}
	for {
		ev, err := stream.Next(c.Ctx)
		switch {
		case err != nil && c.Ctx.Err() != nil, errors.Is(err, context.Canceled):
			return 0
		case errors.Is(err, io.EOF):
			c.Ui.Error("The agent ended the event stream")
			return 1
		case err != nil:
			return c.fail("reading events", err)
		}
		dropped := ev.Topic == api.TopicAgent && ev.Type == "SubscriberDropped"
		if c.json {
			b, err := json.Marshal(ev)
			if err != nil {
				return c.fail("encoding event", err)
			}
			c.Ui.Output(string(b))
		} else {
			c.Ui.Output(c.describe(ev))
		}
		if dropped {
			c.Ui.Error("The agent disconnected this stream: " + ev.Payload.Message)
			return 1
		}
	}
}

// describe renders one event as a line: time, topic, type, key, details.
func (c *EventsCommand) describe(ev *api.Event) string {
	p := ev.Payload
	var parts []string
	switch {
	case p.TaskEvent != nil:
		msg := p.TaskEvent.Type
		if p.TaskEvent.DisplayMessage != "" {
			msg += ": " + p.TaskEvent.DisplayMessage
		}
		parts = append(parts, fmt.Sprintf("task %q alloc %s: %s", p.TaskName, c.shortID(p.AllocID), msg))
	case p.Allocation != nil:
		parts = append(parts, fmt.Sprintf("job %q group %q: %s", p.Allocation.JobID, p.Allocation.TaskGroup, p.Allocation.ClientStatus))
	case p.Plugin != nil:
		health := "unhealthy"
		if p.Plugin.Healthy {
			health = "healthy"
		}
		s := fmt.Sprintf("plugin %q %s alloc %s: %s", p.Plugin.PluginID, p.PluginType, c.shortID(p.Plugin.AllocID), health)
		if p.Plugin.HealthDescription != "" {
			s += " (" + p.Plugin.HealthDescription + ")"
		}
		parts = append(parts, s)
	}
	if p.Message != "" {
		parts = append(parts, p.Message)
	}
	key := ev.Key
	if key != "" {
		key = c.shortID(key)
	}
	return strings.TrimRight(fmt.Sprintf("%s  %-10s  %-20s  %-8s  %s", formatUnixNano(ev.Time), ev.Topic, ev.Type, key,
		strings.Join(parts, "; ")), " ")
}
