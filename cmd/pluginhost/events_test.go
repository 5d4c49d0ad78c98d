package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hashicorp/cli"

	"github.com/pluginhost/pluginhost/api"
)

func TestEventsCommand(t *testing.T) {
	for _, jsonOut := range []bool{false, true} {
		fa, addr := startAgent(t)
		ctx := testCtx(t)
		ui := cli.NewMockUi()
		args := []string{"events", "-topic", "Task", "-topic", "Plugin"}
		if jsonOut {
			args = append(args, "-json")
		}
		done := make(chan int, 1)
		go func() { done <- runWith(ctx, args, ui, func(string) string { return addr }) }()
		select {
		case <-fa.subd:
		case <-ctx.Done():
			t.Fatal("events never subscribed")
		}
		fa.publish(&api.Event{Topic: api.TopicTask, Type: "TaskEvent", Key: "a1",
			Payload: api.EventPayload{AllocID: "a1", TaskName: "web", TaskEvent: &api.TaskEvent{Type: "Started", DisplayMessage: "Task started"}}})
		fa.publish(&api.Event{Topic: api.TopicAllocation, Type: "AllocationUpdated", Key: "a1"}) // filtered out
		fa.publish(&api.Event{Topic: api.TopicPlugin, Type: "PluginHealthChanged", Key: "mockcsi",
			Payload: api.EventPayload{PluginType: "csi-node", Plugin: &api.CSIInfo{PluginID: "mockcsi", AllocID: "a1", HealthDescription: "probe failed"}}})
		// The agent going away ends the command, after everything it sent.
		fa.endStreams()
		if code := <-done; code != 1 {
			t.Errorf("events after the stream ended: code %d", code)
		}
		out := ui.OutputWriter.String()
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if !jsonOut {
			// A header first: a quiet agent printed nothing at all.
			if !strings.HasPrefix(lines[0], "Time") || !strings.Contains(lines[0], "Details") {
				t.Fatalf("no header:\n%s", out)
			}
			lines = lines[1:]
		}
		if len(lines) != 2 {
			t.Fatalf("json=%v: want 2 events, got:\n%s", jsonOut, out)
		}
		if jsonOut {
			var ev api.Event
			if err := json.Unmarshal([]byte(lines[1]), &ev); err != nil || ev.Index != 3 || ev.Payload.Plugin.PluginID != "mockcsi" {
				t.Errorf("-json line: %v %s", err, lines[1])
			}
			continue
		}
		if !strings.Contains(lines[0], `Task        TaskEvent             a1        task "web" alloc a1: Started: Task started`) ||
			!strings.Contains(lines[1], `plugin "mockcsi" csi-node alloc a1: unhealthy (probe failed)`) {
			t.Errorf("events output:\n%s", out)
		}
		if !strings.Contains(ui.ErrorWriter.String(), "The agent ended the event stream") {
			t.Errorf("stderr: %s", ui.ErrorWriter.String())
		}
	}
}

func TestEventsBadTopic(t *testing.T) {
	_, addr := startAgent(t)
	r := runCLI(t, testCtx(t), addr, "events", "-topic", "Weather")
	if r.code != 1 || !strings.Contains(r.stderr, "topic") || !strings.Contains(r.stderr, "HTTP 400") {
		t.Errorf("bad topic: %+v", r)
	}
}
