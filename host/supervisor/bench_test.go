package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/host/taskrunner"
	"github.com/pluginhost/pluginhost/internal/baseline"
	"github.com/pluginhost/pluginhost/sdk"
)

// BenchmarkBareGoPluginFirstRPC is the floor for BenchmarkLaunchToRegistered:
// go-plugin alone launching mockcsi, handshaking, dispensing and answering
// one Probe. No task dir, log shipper, state store or registry.
func BenchmarkBareGoPluginFirstRPC(b *testing.B) {
	root := b.TempDir()
	n := 0
	for b.Loop() {
		n++
		kill, err := baseline.GoPluginFirstProbe(mockcsiBin, filepath.Join(root, strconv.Itoa(n)))
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		kill()
		b.StartTimer()
	}
}

// BenchmarkLaunchToRegistered measures a new plugin allocation from
// NewAllocRunner to the "Plugin became healthy" event, which the supervisor
// emits once the plugin is in the registry: task dir, log shipper, launch
// (go_plugin: handshake and identity RPC), durable state writes, then the
// supervisor's socket wait, Probe, GetPluginInfo and registration (another
// durable write). started→registered-ms runs from the Started event's
// timestamp, so it includes the runner's fsync of that event as well as the
// supervisor's work; BenchmarkGoPluginLaunchToRegistered isolates the latter.
func BenchmarkLaunchToRegistered(b *testing.B) {
	for _, drv := range drivers {
		b.Run(drv, func(b *testing.B) {
			a := newAgent(b, "", agentOpts{})
			job := pluginJob("csi", drv, jobspec.CSIPluginTypeNode, nil)
			var own time.Duration
			n := 0
			for b.Loop() {
				ar := a.Run(job)
				n++
				healthy := a.Events.Wait(b, ar.ID(), EventPluginHealthy, 1)
				b.StopTimer()
				started := a.Events.Matching(ar.ID(), "Started")
				if len(started) != 1 {
					b.Fatalf("%d starts", len(started))
				}
				own += healthy.Time.Sub(started[0].Time)
				a.Stop(ar)
				b.StartTimer()
			}
			b.ReportMetric(float64(own.Microseconds())/1000/float64(n), "started→registered-ms")
		})
	}
}

// BenchmarkGoPluginLaunchToRegistered is BenchmarkBareGoPluginFirstRPC's
// like for like through the supervisor: the go_plugin driver launches
// mockcsi (handshake and identity RPC), then the supervision waits for the
// socket, probes, asks GetPluginInfo and registers in a registry persisted
// to a real bbolt store. The task runner's own work (task dir, log
// shipper, its state writes) is left out; BenchmarkLaunchToRegistered has it.
func BenchmarkGoPluginLaunchToRegistered(b *testing.B) {
	dir := b.TempDir()
	db, err := state.Open(filepath.Join(dir, "state.db"), state.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	reg, err := dynamic.New(dynamic.Config{Store: db})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(reg.Shutdown)
	w, err := driver.NewWatcher()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = w.Close() })
	drv, err := driver.NewGoPlugin(driver.GoPluginConfig{
		Watcher: w, Handshake: sdk.Handshake(), PluginSets: sdk.HostPlugins(), Dispense: sdk.PluginCSI,
		Logger: hclog.NewNullLogger(),
	})
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := Config{Registry: reg, MountRoot: filepath.Join(dir, "csi")}.withDefaults()
	if err != nil {
		b.Fatal(err)
	}
	job := pluginJob("csi", jobspec.DriverGoPlugin, jobspec.CSIPluginTypeNode, nil)
	sockDir := filepath.Join(dir, "s")
	if err := os.Mkdir(sockDir, 0o700); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var launch, supervise time.Duration
	n := 0
	for b.Loop() {
		n++
		t0 := time.Now()
		allocID := taskrunner.NewUUID()
		req := &taskrunner.HookRequest{AllocID: allocID, Job: job, Group: job.TaskGroups[0], Task: csiTask(job), SocketDir: sockDir}
		s := newSupervisor(&cfg, req, cfg.Logger)
		task, err := drv.Start(ctx, &driver.StartRequest{
			AllocID: allocID, TaskName: "plugin", Command: mockcsiBin,
			Env: []string{"NOMAD_TASK_DIR=" + dir}, SocketDir: sockDir, Logger: hclog.NewNullLogger(),
		})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		sv := &supervision{s: s, task: task, socket: task.Handle().SocketPath, logger: cfg.Logger,
			emit:        func(string, string) {},
			restartTask: func(reason string) { b.Errorf("restart: %s", reason) },
		}
		client, err := sv.newChecker()
		if err != nil {
			b.Fatal(err)
		}
		if !sv.start(ctx, client) {
			b.Fatal("not registered")
		}
		b.StopTimer()
		launch += t1.Sub(t0)
		supervise += time.Since(t1)
		if _, ok := reg.ForAlloc(dynamic.PluginTypeCSINode, "hostpath", allocID); !ok {
			b.Fatal("not in the registry")
		}
		sv.bg.Wait()
		_ = client.Close()
		if err := task.Kill(ctx, syscall.SIGTERM, 5*time.Second); err != nil {
			b.Fatal(err)
		}
		task.Detach()
		if err := s.deregister(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(launch.Microseconds())/1000/float64(n), "launch-ms")
	b.ReportMetric(float64(supervise.Microseconds())/1000/float64(n), "supervise-ms")
}
