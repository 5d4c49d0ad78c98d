package supervisor

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/taskrunner"
	"github.com/pluginhost/pluginhost/internal/testbin"
)

// genericJob runs one of go-plugin's own KV examples (plugin-go-grpc or
// plugin-go-netrpc) as plugin kv/kv_grpc.
func genericJob(t *testing.T, bin string, healthTimeout time.Duration) *jobspec.Job {
	return &jobspec.Job{
		ID: "gen", Name: "gen", Type: jobspec.JobTypeService, Datacenters: []string{"dc1"},
		TaskGroups: []*jobspec.TaskGroup{{
			Name: "g", Count: 1,
			Restart: &jobspec.RestartPolicy{Attempts: 2, Interval: time.Minute, Delay: 10 * time.Millisecond, Mode: jobspec.RestartModeFail},
			Tasks: []*jobspec.Task{{
				Name: "plugin", Driver: jobspec.DriverGoPlugin,
				Config: &jobspec.TaskConfig{
					Command:   testbin.MustPath(t, bin),
					Handshake: &jobspec.GoPluginHandshake{MagicCookieKey: "BASIC_PLUGIN", MagicCookieValue: "hello", ProtocolVersions: []int{1}},
					Plugin:    &jobspec.GoPluginProvides{Type: "kv", Name: "kv_grpc", HealthTimeout: healthTimeout},
				},
				KillTimeout: 5 * time.Second, KillSignal: "SIGTERM",
				Logs: &jobspec.LogConfig{MaxFiles: 2, MaxFileSizeMB: 1},
			}},
		}},
	}
}

// A plugin that is not CSI goes through the same supervision: healthy from
// go-plugin's health service, registered under its own type and name with
// its socket, deregistered when it exits, and re-adopted without a
// relaunch or a new registration after an agent restart. gRPC and net/rpc
// plugins alike (net/rpc's health is go-plugin's Control.Ping).
func TestGenericPluginSupervised(t *testing.T) {
	for _, bin := range []string{"plugin-go-grpc", "plugin-go-netrpc"} {
		t.Run(bin, func(t *testing.T) { testGenericPluginSupervised(t, bin) })
	}
}

func testGenericPluginSupervised(t *testing.T, bin string) {
	a := newAgent(t, "", agentOpts{})
	events := subscribe(t, a.reg, "kv")
	ar := a.Run(genericJob(t, bin, 10*time.Second))
	a.Events.Wait(t, ar.ID(), EventPluginHealthy, 1)
	h := handle(t, ar, "plugin")
	p, ok := a.reg.ForAlloc("kv", "kv_grpc", ar.ID())
	if !ok || p.ConnectionInfo.SocketPath != h.SocketPath {
		t.Fatalf("registration %+v, want kv/kv_grpc at %s", p, h.SocketPath)
	}
	// What a consumer needs to re-attach with go-plugin.
	if p.Options[OptionGoPluginProtocol] != h.Reattach.Protocol || p.Options[OptionGoPluginPid] != fmt.Sprint(h.Pid) ||
		p.Options[OptionGoPluginProtocolVersion] != "1" {
		t.Fatalf("registration options %v, want the reattach record of %+v", p.Options, h.Reattach)
	}
	nextEvents(t, events, "registered "+ar.ID())
	if hl, ok := a.health.Get("kv", "kv_grpc", ar.ID()); !ok || !hl.Healthy || hl.CheckedAt.IsZero() {
		t.Fatalf("health table: %+v %t, want a healthy check", hl, ok)
	}

	b := a.restart(func(b *agent) { events = subscribe(t, b.reg, "kv") })
	b.Events.Wait(t, ar.ID(), EventPluginHealthy, 1)
	if n := len(b.Events.Matching(ar.ID(), taskrunner.EventStarted)); n != 0 {
		t.Fatalf("plugin relaunched after the agent restart:%s", b.Events)
	}
	if h2 := handle(t, b.Runners[0], "plugin"); h2.Pid != h.Pid {
		t.Fatalf("pid %d → %d", h.Pid, h2.Pid)
	}
	if after, ok := b.reg.ForAlloc("kv", "kv_grpc", ar.ID()); !ok || after.Seq != p.Seq {
		t.Fatalf("registration changed across the restart: %+v → %+v", p, after)
	}

	// Exit: deregistered, then registered again by the restart.
	if err := unix.Kill(h.Pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	nextEvents(t, events, "deregistered "+ar.ID(), "registered "+ar.ID())
	if hl, ok := b.health.Get("kv", "kv_grpc", ar.ID()); !ok || !hl.Healthy {
		t.Fatalf("health table after the relaunch: %+v %t", hl, ok)
	}
}

// A generic plugin that stops answering its health checks is restarted
// once it has been unhealthy for longer than its health_timeout: nobody
// else watches it (CSI plugins are watched by the CSI manager and keep
// Nomad's report-only heartbeat).
func TestGenericPluginUnhealthyRestarts(t *testing.T) {
	for _, bin := range []string{"plugin-go-grpc", "plugin-go-netrpc"} {
		t.Run(bin, func(t *testing.T) { testGenericPluginUnhealthyRestarts(t, bin) })
	}
}

func testGenericPluginUnhealthyRestarts(t *testing.T, bin string) {
	a := newAgent(t, "", agentOpts{probeInterval: 50 * time.Millisecond, probeTimeout: 50 * time.Millisecond})
	ar := a.Run(genericJob(t, bin, 300*time.Millisecond))
	a.Events.Wait(t, ar.ID(), EventPluginHealthy, 1)
	h := handle(t, ar, "plugin")
	// A stopped process keeps its socket but answers nothing.
	if err := unix.Kill(h.Pid, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	a.Events.Wait(t, ar.ID(), EventPluginUnhealthy, 1)
	// The event is emitted after the table is written.
	if hl, ok := a.health.Get("kv", "kv_grpc", ar.ID()); !ok || hl.Healthy || !strings.Contains(hl.Description, "health check") {
		t.Fatalf("health table of a stopped plugin: %+v %t", hl, ok)
	}
	ev := a.Events.Wait(t, ar.ID(), taskrunner.EventRestartSignal, 1)
	if !strings.Contains(ev.Message, "unhealthy for longer than health_timeout 300ms") {
		t.Fatalf("restart reason %q", ev.Message)
	}
	a.Events.Wait(t, ar.ID(), EventPluginHealthy, 2)
}
