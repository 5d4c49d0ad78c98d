package supervisor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/taskrunner"
	"github.com/pluginhost/pluginhost/internal/testproc"
	"golang.org/x/sys/unix"
)

// subscribe follows the registry's events of one type for the test's life.
func subscribe(t testing.TB, reg *dynamic.Registry, typ string) <-chan *dynamic.Event {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return reg.Subscribe(ctx, typ)
}

// nextEvents reads the next len(want) events and compares "Type alloc".
func nextEvents(t testing.TB, ch <-chan *dynamic.Event, want ...string) {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	var got []string
	for range want {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("subscription closed after %v", got)
			}
			got = append(got, ev.Type.String()+" "+ev.Info.AllocID)
		case <-deadline.C:
			t.Fatalf("registry events %v, want %v", got, want)
		}
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("registry events %v, want %v", got, want)
	}
}

// A task that exits is deregistered by the Exited hook, before its
// restart; the next launch registers anew, and the last exit leaves
// nothing behind.
func TestExitDeregisters(t *testing.T) {
	eachDriver(t, func(t *testing.T, drv string) {
		a := newAgent(t, "", agentOpts{probeInterval: 50 * time.Millisecond})
		// The RPC after Probe and GetPluginInfo (and go_plugin's identity
		// call at launch) kills the plugin: the first heartbeat.
		crash := "2"
		if drv == jobspec.DriverGoPlugin {
			crash = "3"
		}
		job := pluginJob("csi", drv, jobspec.CSIPluginTypeNode, map[string]string{"MOCKCSI_CRASH_AFTER": crash})
		job.TaskGroups[0].Restart.Attempts = 1
		events := subscribe(t, a.reg, dynamic.PluginTypeCSINode)
		ar := a.Run(job)
		<-ar.Done()
		id := ar.ID()
		nextEvents(t, events, "registered "+id, "deregistered "+id, "registered "+id, "deregistered "+id)
		notRegistered(t, a.reg, dynamic.PluginTypeCSINode, id)
		if n := len(a.Events.Matching(id, EventPluginHealthy)); n != 2 {
			t.Errorf("%d healthy events, want one per launch:%s", n, a.Events)
		}
	})
}

// Two allocations of one plugin, as in a rolling update: the newer is
// active; when it stops, the older takes over; neither deregisters the
// other.
func TestRollingUpdate(t *testing.T) {
	a := newAgent(t, "", agentOpts{})
	job := pluginJob("csi", jobspec.DriverGoPlugin, jobspec.CSIPluginTypeMonolith, nil)
	older := a.Run(job)
	a.Events.Wait(t, older.ID(), EventPluginHealthy, 1)
	newer := a.Run(job)
	a.Events.Wait(t, newer.ID(), EventPluginHealthy, 1)
	for _, typ := range []string{dynamic.PluginTypeCSINode, dynamic.PluginTypeCSIController} {
		if p, ok := a.reg.Active(typ, "hostpath"); !ok || p.AllocID != newer.ID() {
			t.Fatalf("%s active = %+v, want the newer alloc %s", typ, p, newer.ID())
		}
	}
	a.Stop(newer)
	for _, typ := range []string{dynamic.PluginTypeCSINode, dynamic.PluginTypeCSIController} {
		notRegistered(t, a.reg, typ, newer.ID())
		if p, ok := a.reg.Active(typ, "hostpath"); !ok || p.AllocID != older.ID() {
			t.Fatalf("%s active after the newer stopped = %+v, want the older alloc %s", typ, p, older.ID())
		}
	}
	a.Stop(older)
	for _, typ := range []string{dynamic.PluginTypeCSINode, dynamic.PluginTypeCSIController} {
		if p, ok := a.reg.Active(typ, "hostpath"); ok {
			t.Fatalf("%s still active: %+v", typ, p)
		}
	}
}

// An agent restart re-adopts the plugin (same pid, no launch), finds its
// registration restored from the store at the same socket and probes it
// once: the registry keeps the registration as it was and emits nothing.
func TestAgentRestartKeepsRegistration(t *testing.T) {
	eachDriver(t, func(t *testing.T, drv string) {
		a, ar := healthyPlugin(t, drv, jobspec.CSIPluginTypeNode, agentOpts{})
		h := handle(t, ar, "plugin")
		before := registered(t, a.reg, dynamic.PluginTypeCSINode, ar.ID())

		var events <-chan *dynamic.Event
		b := a.restart(func(b *agent) {
			// Restored from the store before any supervisor ran.
			registered(t, b.reg, dynamic.PluginTypeCSINode, ar.ID())
			events = subscribe(t, b.reg, dynamic.PluginTypeCSINode)
		})
		b.Events.Wait(t, ar.ID(), EventPluginHealthy, 1)
		if n := len(b.Events.Matching(ar.ID(), taskrunner.EventReattached)); n != 1 {
			t.Fatalf("%d reattached events:%s", n, b.Events)
		}
		if n := len(b.Events.Matching(ar.ID(), taskrunner.EventStarted)); n != 0 {
			t.Fatalf("plugin relaunched:%s", b.Events)
		}
		if h2 := handle(t, b.Runners[0], "plugin"); h2.Pid != h.Pid || h2.StartTime != h.StartTime {
			t.Fatalf("pid %d → %d", h.Pid, h2.Pid)
		}
		after := registered(t, b.reg, dynamic.PluginTypeCSINode, ar.ID())
		if after.Seq != before.Seq || !after.RegisteredAt.Equal(before.RegisteredAt) || after.ConnectionInfo.SocketPath != before.ConnectionInfo.SocketPath {
			t.Fatalf("registration changed: %+v → %+v", before, after)
		}
		// Events of a type are totally ordered: had the re-registration
		// changed anything, its event would come before the sentinel's.
		sentinel := &dynamic.PluginInfo{Type: dynamic.PluginTypeCSINode, Name: "sentinel", AllocID: "sentinel",
			ConnectionInfo: &dynamic.ConnectionInfo{SocketPath: "/nonexistent.sock"}}
		if err := b.reg.Register(sentinel); err != nil {
			t.Fatal(err)
		}
		nextEvents(t, events, "registered sentinel")
	})
}

// A re-adopted plugin whose registration is not in the store (the last
// agent died between its launch and its registration) is probed and
// registered anew, without a relaunch.
func TestAgentRestartRegistersWhatTheStoreLacks(t *testing.T) {
	eachDriver(t, func(t *testing.T, drv string) {
		a, ar := healthyPlugin(t, drv, jobspec.CSIPluginTypeMonolith, agentOpts{})
		before := registered(t, a.reg, dynamic.PluginTypeCSINode, ar.ID())
		b := a.restart(func(b *agent) {
			// Only the controller half of the monolith was stored.
			if err := b.reg.Deregister(dynamic.PluginTypeCSINode, "hostpath", ar.ID()); err != nil {
				t.Fatal(err)
			}
			notRegistered(t, b.reg, dynamic.PluginTypeCSINode, ar.ID())
		})
		b.Events.Wait(t, ar.ID(), EventPluginHealthy, 1)
		after := registered(t, b.reg, dynamic.PluginTypeCSINode, ar.ID())
		if after.Seq == before.Seq || after.ConnectionInfo.SocketPath != before.ConnectionInfo.SocketPath {
			t.Errorf("node registration after restart: %+v, want a new one at %s", after, before.ConnectionInfo.SocketPath)
		}
		if n := len(b.Events.Matching(ar.ID(), taskrunner.EventStarted)); n != 0 {
			t.Fatalf("plugin relaunched:%s", b.Events)
		}
	})
}

// A plugin that died while the agent was down reaches the Exited hook
// through the runner's restore path: its restored registration goes, and
// the relaunch registers anew.
func TestDiedWhileAgentDown(t *testing.T) {
	eachDriver(t, func(t *testing.T, drv string) {
		a, ar := healthyPlugin(t, drv, jobspec.CSIPluginTypeNode, agentOpts{})
		h := handle(t, ar, "plugin")
		a.Close()
		if err := unix.Kill(h.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		testproc.WaitGone(t, h.Pid, 30*time.Second)

		id := ar.ID()
		var events <-chan *dynamic.Event
		b := a.restart(func(b *agent) {
			registered(t, b.reg, dynamic.PluginTypeCSINode, id)
			events = subscribe(t, b.reg, dynamic.PluginTypeCSINode)
		})
		b.Events.Wait(t, id, EventPluginHealthy, 1)
		nextEvents(t, events, "deregistered "+id, "registered "+id)
		if n := len(b.Events.Matching(id, taskrunner.EventStarted)); n != 1 {
			t.Fatalf("%d launches after restore:%s", n, b.Events)
		}
		if p := registered(t, b.reg, dynamic.PluginTypeCSINode, id); p.ConnectionInfo.SocketPath == "" {
			t.Fatal("no socket")
		}
		handle(t, b.Runners[0], "plugin")
	})
}

// With a data dir too long for <data_dir>/sockets/<alloc>/... the runner
// falls back to a short socket root, and the plugin is still reached and
// registered on a socket path within sun_path.
func TestLongDataDir(t *testing.T) {
	eachDriver(t, func(t *testing.T, drv string) {
		dataDir := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			t.Fatal(err)
		}
		a := newAgent(t, dataDir, agentOpts{})
		ar := a.Run(pluginJob("csi", drv, jobspec.CSIPluginTypeNode, nil))
		t.Cleanup(func() { _ = os.RemoveAll(filepath.Dir(ar.SocketDir())) })
		a.Events.Wait(t, ar.ID(), EventPluginHealthy, 1)
		handle(t, ar, "plugin")
		p := registered(t, a.reg, dynamic.PluginTypeCSINode, ar.ID())
		sock := p.ConnectionInfo.SocketPath
		if strings.HasPrefix(sock, dataDir) || len(sock) > dynamic.MaxSocketPathLen {
			t.Fatalf("socket %s (%d bytes) is not the short fallback", sock, len(sock))
		}
		if want := filepath.Join(dataDir, "csi", "node", "hostpath"); p.Options["MountDir"] != want {
			t.Fatalf("mount dir %q, want %q under the long data dir", p.Options["MountDir"], want)
		}
	})
}

// failingPuts is the real bbolt store with one injected fault: writes of
// one plugin type fail, as a full disk would fail them.
type failingPuts struct {
	dynamic.Store
	typ string
}

func (s failingPuts) PutPlugins(infos ...*dynamic.PluginInfo) error {
	for _, info := range infos {
		if info.Type == s.typ {
			return errors.New("injected: no space left on device")
		}
	}
	return s.Store.PutPlugins(infos...)
}

// A monolith whose controller registration fails is not registered as a
// node either: both halves are written in one step, so the node half never
// appears, not even for a moment, and the task restarts with the reason.
func TestMonolithRegistersBothOrNeither(t *testing.T) {
	a := newAgent(t, "", agentOpts{store: func(s dynamic.Store) dynamic.Store {
		return failingPuts{Store: s, typ: dynamic.PluginTypeCSIController}
	}})
	events := subscribe(t, a.reg, dynamic.PluginTypeCSINode)
	ar := a.Run(pluginJob("csi", jobspec.DriverGoPlugin, jobspec.CSIPluginTypeMonolith, nil))
	sig := a.Events.Wait(t, ar.ID(), taskrunner.EventRestartSignal, 1)
	if !strings.Contains(sig.Message, "could not be registered") || !strings.Contains(sig.Message, "no space left") {
		t.Fatalf("restart reason %q", sig.Message)
	}
	id := ar.ID()
	// Events of a type are totally ordered: a node registration of the
	// monolith would come before the sentinel's.
	sentinel := &dynamic.PluginInfo{Type: dynamic.PluginTypeCSINode, Name: "sentinel", AllocID: "sentinel",
		ConnectionInfo: &dynamic.ConnectionInfo{SocketPath: "/nonexistent.sock"}}
	if err := a.reg.Register(sentinel); err != nil {
		t.Fatal(err)
	}
	nextEvents(t, events, "registered sentinel")
	notRegistered(t, a.reg, dynamic.PluginTypeCSINode, id)
	notRegistered(t, a.reg, dynamic.PluginTypeCSIController, id)
	if n := len(a.Events.Matching(id, EventPluginHealthy)); n != 0 {
		t.Fatalf("reported healthy although not registered:%s", a.Events)
	}
}
