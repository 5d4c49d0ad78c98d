package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/pluginhost/pluginhost/api"
)

// BenchmarkVolumeJobRun times `job run` of a job with one CSI volume until
// its task is running with the volume controller-published, staged,
// published and bound at its destination (ns/op), against a bare client
// making the same CSI calls (ControllerPublish, NodeStage, NodePublish) on
// the same mockcsi, with the staging directory the spec has the CO make,
// and then a fork/exec of the same task, in the same run
// (bare-ns/op, x-bare; goal x-bare ≤ 1.3). Volumes are created, and jobs
// stopped, outside the timing.
func BenchmarkVolumeJobRun(b *testing.B) {
	e := newEnv(b, csiConfig)
	a := e.start()
	const plugin = "jb"
	m := e.markerFor("jbplug")
	alloc := a.runJob(plugin, jobHCL(plugin, "", csiTask(b, "raw_exec", "plugin", m, plugin, "30s")))[0]
	a.mustWait("plugin healthy", time.Minute, func(ctx context.Context) (bool, error) {
		p, err := a.client.Plugin(ctx, plugin)
		return err == nil && p.ControllersHealthy == 1 && p.NodesHealthy == 1, nil
	}, api.TopicPlugin)
	conn, err := grpc.NewClient("unix://"+pluginEndpoint(b, a, alloc, m), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	ctl, node := csipb.NewControllerClient(conn), csipb.NewNodeClient(conn)
	ctx := context.Background()
	dest := filepath.Join(e.root, "mnt")
	bareDir := filepath.Join(e.root, "bare")
	capability := &csipb.VolumeCapability{
		AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}},
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}

	vs := paired{label: "bare"}
	run := 0
	for b.Loop() {
		b.StopTimer()
		run++
		id := fmt.Sprintf("jr%d", run)
		if _, err := a.client.CreateVolume(ctx, benchVolume(id, plugin)); err != nil {
			b.Fatal(err)
		}
		a.waitVolume(id, "ready", volReady)
		tk := shTask("t", m, sleeper)
		tk.extra = volumeMount("data", dest, false)
		src := jobHCL(id, volumeBlock("data", id, "single-node-writer", false), tk)
		bare, err := ctl.CreateVolume(ctx, &csipb.CreateVolumeRequest{Name: "bare-" + id, VolumeCapabilities: []*csipb.VolumeCapability{capability},
			CapacityRange: &csipb.CapacityRange{RequiredBytes: 1 << 20}})
		if err != nil {
			b.Fatal(err)
		}
		// Subscribed before the clock starts, so that the agent's side is
		// timed up to the Started event itself, with no polling.
		es, err := a.client.Events(ctx, api.TopicTask)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()

		start := time.Now()
		al := a.runJob(id, src)[0]
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		for {
			ev, err := es.Next(wctx)
			if err != nil {
				b.Fatal(err)
			}
			if te := ev.Payload.TaskEvent; te != nil && ev.Payload.AllocID == al && te.Type == api.TaskStarted {
				break
			}
		}
		agentTook := time.Since(start)

		b.StopTimer()
		cancel()
		_ = es.Close()
		a.stopJob(id)
		a.waitVolume(id, "released", noClaims)

		volID := bare.GetVolume().GetVolumeId()
		staging := filepath.Join(bareDir, id, "staging")
		target := filepath.Join(bareDir, id, "target")
		start = time.Now()
		// The CO makes the staging directory (CSI spec), as the agent
		// does on its side of the clock.
		if err := os.MkdirAll(staging, 0o700); err != nil {
			b.Fatal(err)
		}
		pub, err := ctl.ControllerPublishVolume(ctx, &csipb.ControllerPublishVolumeRequest{VolumeId: volID, NodeId: "e2e", VolumeCapability: capability})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := node.NodeStageVolume(ctx, &csipb.NodeStageVolumeRequest{VolumeId: volID, PublishContext: pub.GetPublishContext(),
			StagingTargetPath: staging, VolumeCapability: capability}); err != nil {
			b.Fatal(err)
		}
		if _, err := node.NodePublishVolume(ctx, &csipb.NodePublishVolumeRequest{VolumeId: volID, PublishContext: pub.GetPublishContext(),
			StagingTargetPath: staging, TargetPath: target, VolumeCapability: capability}); err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command("/bin/sh", "-c", sleeper)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		bareTook := time.Since(start)
		vs.add(agentTook, bareTook)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_, _ = node.NodeUnpublishVolume(ctx, &csipb.NodeUnpublishVolumeRequest{VolumeId: volID, TargetPath: target})
		_, _ = node.NodeUnstageVolume(ctx, &csipb.NodeUnstageVolumeRequest{VolumeId: volID, StagingTargetPath: staging})
		_, _ = ctl.ControllerUnpublishVolume(ctx, &csipb.ControllerUnpublishVolumeRequest{VolumeId: volID, NodeId: "e2e"})
		b.StartTimer()
	}
	vs.report(b)
}

// restartVolumes is how many allocations BenchmarkAgentRestartVolumes
// restores, each with a volume of its own (per_alloc).
const restartVolumes = 100

// BenchmarkAgentRestartVolumes kills the agent with SIGKILL while 100
// allocations run, each holding a staged and published volume, and times a
// new agent from exec until every allocation runs again (re-adopted, none
// relaunched). Untimed, it then checks that every claim is still published
// and that the restore made no volume call at the plugin (goal ≤ 0.5 s,
// zero node RPCs).
func BenchmarkAgentRestartVolumes(b *testing.B) {
	e := newEnv(b, csiConfig)
	a := e.start()
	p := startVolPlugin(b, e, a, "go_plugin", "rv", map[string]string{"MOCKCSI_RECORD_CALLS": "1"})
	ctx := context.Background()
	for i := range restartVolumes {
		id := fmt.Sprintf("rv[%d]", i)
		if _, err := a.client.CreateVolume(ctx, benchVolume(id, "rv")); err != nil {
			b.Fatal(err)
		}
	}
	for i := range restartVolumes {
		a.waitVolume(fmt.Sprintf("rv[%d]", i), "ready", volReady)
	}
	m := e.markerFor("many")
	tk := shTask("t", m, sleeper)
	tk.extra = volumeMount("data", filepath.Join(e.root, "mnt"), false)
	group := fmt.Sprintf("    count = %d\n", restartVolumes) + perAllocVolumeBlock("data", "rv", "single-node-writer", false)
	a.runStarted("many", jobHCL("many", group, tk), restartVolumes) // see runStarted
	allRunning := jobRunning("many", "t", restartVolumes)
	a.mustWait("all running", 5*time.Minute, allRunning(a), api.TopicAllocation)
	before := p.calls(b, nil)
	restartLoop(b, e, a, m, restartVolumes, "tasks running", api.TopicAllocation, allRunning, func(a *agentProc) {
		vols, err := a.client.Volumes(ctx, "rv")
		if err != nil {
			b.Fatal(err)
		}
		published := 0
		for _, v := range vols {
			full, err := a.client.Volume(ctx, v.ID)
			if err != nil {
				b.Fatal(err)
			}
			for _, c := range full.Claims {
				if c.State == "published" && c.Desired == "mounted" {
					published++
				}
			}
		}
		if published != restartVolumes {
			b.Fatalf("after the restart %d claims are published, want %d", published, restartVolumes)
		}
		if after := p.calls(b, nil); !sameNodeCalls(before, after) {
			b.Fatalf("the restore made volume calls: before %v, after %v", before.Calls, after.Calls)
		}
	})
}
