package supervisor

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/taskrunner"
	"golang.org/x/sys/unix"
)

// A plugin whose Probe fails is reported unhealthy with the probe's error,
// never registered, and restarted when health_timeout runs out, the reason
// naming the timeout and the last error.
func TestProbeFailingRestarts(t *testing.T) {
	eachDriver(t, func(t *testing.T, drv string) {
		a := newAgent(t, "", agentOpts{})
		job := pluginJob("csi", drv, jobspec.CSIPluginTypeNode, map[string]string{"MOCKCSI_PROBE_FAIL": "1"})
		csiTask(job).CSIPluginConfig.HealthTimeout = 300 * time.Millisecond
		ar := a.Run(job)
		unhealthy := a.Events.Wait(t, ar.ID(), EventPluginNotHealthy, 1)
		if !strings.Contains(unhealthy.Message, "probe failing on purpose") {
			t.Errorf("unhealthy event %q does not carry the probe error", unhealthy.Message)
		}
		sig := a.Events.Wait(t, ar.ID(), taskrunner.EventRestartSignal, 1)
		if !strings.Contains(sig.Message, "health_timeout 300ms elapsed") || !strings.Contains(sig.Message, "probe failing on purpose") {
			t.Errorf("restart reason %q", sig.Message)
		}
		a.Events.Wait(t, ar.ID(), taskrunner.EventRestarting, 1)
		// The restarted launch is supervised again from scratch.
		a.Events.Wait(t, ar.ID(), EventPluginNotHealthy, 2)
		// Never healthy, so never "became unhealthy" either.
		for _, typ := range []string{EventPluginHealthy, EventPluginUnhealthy} {
			if n := len(a.Events.Matching(ar.ID(), typ)); n != 0 {
				t.Errorf("%d %q events", n, typ)
			}
		}
		notRegistered(t, a.reg, dynamic.PluginTypeCSINode, ar.ID())
	})
}

// ready=false is "still starting": no event while it lasts, a restart with
// the reason when it outlasts health_timeout.
func TestNotReadyBeyondHealthTimeout(t *testing.T) {
	eachDriver(t, func(t *testing.T, drv string) {
		a := newAgent(t, "", agentOpts{})
		job := pluginJob("csi", drv, jobspec.CSIPluginTypeMonolith, map[string]string{"MOCKCSI_NOT_READY_FOR": "1h"})
		csiTask(job).CSIPluginConfig.HealthTimeout = 300 * time.Millisecond
		ar := a.Run(job)
		sig := a.Events.Wait(t, ar.ID(), taskrunner.EventRestartSignal, 1)
		if !strings.Contains(sig.Message, "health_timeout 300ms elapsed: ") || !strings.Contains(sig.Message, "ready=false") {
			t.Errorf("restart reason %q", sig.Message)
		}
		// The unhealthy event comes with the timeout, not before.
		if evs := a.Events.Matching(ar.ID(), EventPluginNotHealthy); len(evs) != 1 || !strings.Contains(evs[0].Message, "ready=false") {
			for _, e := range evs {
				t.Errorf("unhealthy event: %s", e.Message)
			}
			t.Errorf("%d unhealthy events", len(evs))
		}
		notRegistered(t, a.reg, dynamic.PluginTypeCSINode, ar.ID())
		notRegistered(t, a.reg, dynamic.PluginTypeCSIController, ar.ID())
	})
}

// A plugin that is not ready for a while but within health_timeout is
// registered without a restart. Under go_plugin the driver's identity check
// has seen it not ready, so the supervisor must go on probing rather than
// trust that answer either way.
func TestNotReadyWithinHealthTimeout(t *testing.T) {
	eachDriver(t, func(t *testing.T, drv string) {
		a := newAgent(t, "", agentOpts{})
		job := pluginJob("csi", drv, jobspec.CSIPluginTypeNode, map[string]string{"MOCKCSI_NOT_READY_FOR": "300ms"})
		ar := a.Run(job)
		a.Events.Wait(t, ar.ID(), EventPluginHealthy, 1)
		handle(t, ar, "plugin")
		registered(t, a.reg, dynamic.PluginTypeCSINode, ar.ID())
		for _, typ := range []string{taskrunner.EventRestartSignal, EventPluginUnhealthy, EventPluginNotHealthy} {
			if n := len(a.Events.Matching(ar.ID(), typ)); n != 0 {
				t.Errorf("%d %q events:%s", n, typ, a.Events)
			}
		}
	})
}

// The heartbeat turns health changes into events: a frozen plugin (SIGSTOP)
// times its probe out and is reported unhealthy, and healthy again once it
// thaws. It stays registered: as in Nomad, the heartbeat informs and the CSI
// manager fingerprints health on its own.
func TestHeartbeatHealthEvents(t *testing.T) {
	a, ar := healthyPlugin(t, jobspec.DriverGoPlugin, jobspec.CSIPluginTypeNode, agentOpts{probeInterval: 50 * time.Millisecond, probeTimeout: 200 * time.Millisecond})
	h := handle(t, ar, "plugin")
	if err := unix.Kill(h.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	ev := a.Events.Wait(t, ar.ID(), EventPluginUnhealthy, 1)
	if !strings.Contains(ev.Message, "DeadlineExceeded") && !strings.Contains(ev.Message, "deadline exceeded") {
		t.Errorf("unhealthy because %q", ev.Message)
	}
	registered(t, a.reg, dynamic.PluginTypeCSINode, ar.ID())
	if err := unix.Kill(h.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	a.Events.Wait(t, ar.ID(), EventPluginHealthy, 2)
	if n := len(a.Events.Matching(ar.ID(), taskrunner.EventRestartSignal)); n != 0 {
		t.Errorf("heartbeat failure restarted the task:%s", a.Events)
	}
}
