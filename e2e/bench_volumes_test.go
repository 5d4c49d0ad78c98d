package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/pluginhost/pluginhost/api"
)

// benchVolumes is how many volumes one BenchmarkVolumes100 run creates and
// deletes; benchVolumeConc how many are in flight at once, on both sides
// (the agent's volume workers are volumes.DefaultVolumeWorkers, also 16).
const (
	benchVolumes    = 100
	benchVolumeConc = 16
)

// BenchmarkVolumes100 creates and deletes 100 volumes through the agent,
// 16 at a time: each is `volume create` (CreateVolumeSource, then its
// VolumeUpdated event saying ready) followed by `volume delete`
// (DeleteVolume, then its VolumeDeleted event). In the same run, the same
// CSI calls (CreateVolume, DeleteVolume for 100 other names) go from a bare
// gRPC client straight to the same mockcsi process, on the socket the agent
// gave it (CSI_ENDPOINT, read from the raw_exec task's environment), also
// 16 at a time; the two sides take turns going first. ns/op is the agent
// path; bare-ns/op and x-bare compare (goal x-bare ≤ 1.3).
func BenchmarkVolumes100(b *testing.B) {
	// enable_debug: the agent's profile can be taken while this runs
	// (README, "Metrics").
	e := newEnv(b, csiConfig+"enable_debug = true\n")
	a := e.start()
	m := e.markerFor("vol")
	const plugin = "vb"
	alloc := a.runJob("vb", jobHCL("vb", "", csiTask(b, "raw_exec", "plugin", m, plugin, "30s")))[0]
	a.mustWait("plugin healthy", time.Minute, func(ctx context.Context) (bool, error) {
		p, err := a.client.Plugin(ctx, plugin)
		if err != nil {
			return false, nil
		}
		return p.ControllersHealthy == 1 && p.NodesHealthy == 1, nil
	}, api.TopicPlugin)
	socket := pluginEndpoint(b, a, alloc, m)
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	ctl := csipb.NewControllerClient(conn)

	ctx := context.Background()
	vs := paired{label: "bare"}
	commits0, writes0 := commitCounts(a)
	var agentCPU time.Duration
	run := 0
	bare := func() time.Duration {
		start := time.Now()
		parallel(b, benchVolumes, benchVolumeConc, func(i int) error {
			return bareCreateDelete(ctx, ctl, fmt.Sprintf("bare-r%d-%03d", run, i))
		})
		return time.Since(start)
	}
	for b.Loop() {
		b.StopTimer()
		run++
		// The sides take turns going first, so that neither gains
		// from what the other leaves behind (writeback, a warm or a
		// busy plugin). Measured, the order moves x-bare by about 0.01.
		var bareTook time.Duration
		if run%2 == 0 {
			bareTook = bare()
		}
		w := watchVolumes(b, a, fmt.Sprintf("r%d-", run))
		cpu0 := cpuTime(a.pid())
		b.StartTimer()
		start := time.Now()
		parallel(b, benchVolumes, benchVolumeConc, func(i int) error {
			return w.createDelete(ctx, plugin, i)
		})
		agentTook := time.Since(start)
		b.StopTimer()
		agentCPU += cpuTime(a.pid()) - cpu0
		w.close()
		if run%2 == 1 {
			bareTook = bare()
		}
		vs.add(agentTook, bareTook)
		b.StartTimer()
	}
	b.StopTimer()
	vs.report(b)
	// On two cores the agent's CPU is taken from the plugin, which is what
	// bounds both sides: it moves x-bare more than anything else the agent
	// does, and it is steadier than x-bare from run to run.
	if run > 0 {
		b.ReportMetric(float64(agentCPU.Microseconds())/float64(run*benchVolumes), "agent-cpu-µs/vol")
	}
	// The agent's own metrics say how well its state writes were grouped:
	// each volume needs four durable writes (create requested, created,
	// delete requested, forgotten).
	if commits, writes := commitCounts(a); run > 0 && commits > commits0 {
		b.ReportMetric(float64(commits-commits0)/float64(run*benchVolumes), "commits/vol")
		b.ReportMetric(float64(writes-writes0)/float64(commits-commits0), "writes/commit")
	}
}

// commitCounts reads the agent's state commits and the writes they carried
// from its metrics.
func commitCounts(a *agentProc) (commits, writes float64) {
	f := a.scrape()["pluginhost_state_commit_writes"]
	if f == nil || len(f.GetMetric()) == 0 {
		a.t.Fatal("the agent reports no pluginhost_state_commit_writes")
	}
	h := f.GetMetric()[0].GetHistogram()
	return float64(h.GetSampleCount()), h.GetSampleSum()
}

// pluginEndpoint returns the socket path of a raw_exec CSI task: its
// CSI_ENDPOINT, as the agent set it, read from the process's environment.
func pluginEndpoint(b *testing.B, a *agentProc, alloc, marker string) string {
	b.Helper()
	al, err := a.client.Allocation(context.Background(), alloc)
	if err != nil {
		b.Fatal(err)
	}
	p, ok := readProc(onlyCopy(b, al, "plugin", marker))
	if !ok {
		b.Fatal("plugin process gone")
	}
	for _, kv := range bytes.Split(p.environ, []byte{0}) {
		if ep, ok := strings.CutPrefix(string(kv), "CSI_ENDPOINT=unix://"); ok {
			return ep
		}
	}
	b.Fatal("the plugin has no CSI_ENDPOINT")
	return ""
}

// parallel runs fn(0..n-1) on conc goroutines and fails b on the first
// error.
func parallel(b *testing.B, n, conc int, fn func(i int) error) {
	b.Helper()
	work := make(chan int)
	errs := make(chan error, conc)
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := fn(i); err != nil {
					errs <- err
					for range work {
					}
					return
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

// volumeWatch follows the Volume topic for one run and hands each volume's
// events to whoever waits for that volume. Every volume's channel exists
// before the run starts, so no event is lost to a waiter that is not yet
// there.
type volumeWatch struct {
	a      *agentProc
	prefix string
	es     *api.EventStream
	ch     map[string]chan *api.Event
	done   chan struct{}
}

func watchVolumes(b *testing.B, a *agentProc, prefix string) *volumeWatch {
	b.Helper()
	es, err := a.client.Events(context.Background(), api.TopicVolume)
	if err != nil {
		b.Fatalf("subscribe: %v", err)
	}
	w := &volumeWatch{a: a, prefix: prefix, es: es, ch: map[string]chan *api.Event{}, done: make(chan struct{})}
	for i := range benchVolumes {
		// A volume has at most four events: queued, created, queued for
		// deletion, deleted.
		w.ch[w.id(i)] = make(chan *api.Event, 8)
	}
	go func() {
		defer close(w.done)
		for {
			ev, err := es.Next(context.Background())
			if err != nil {
				return
			}
			if c, ok := w.ch[ev.Key]; ok {
				c <- ev
			}
		}
	}()
	return w
}

func (w *volumeWatch) id(i int) string { return fmt.Sprintf("%s%03d", w.prefix, i) }

func (w *volumeWatch) close() {
	_ = w.es.Close()
	<-w.done
}

// wait returns when an event for volume id satisfies done, or fails.
func (w *volumeWatch) wait(ctx context.Context, id string, done func(*api.Event) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		select {
		case ev := <-w.ch[id]:
			if ok, err := done(ev); ok || err != nil {
				return err
			}
		case <-w.done:
			return fmt.Errorf("volume %s: the event stream ended", id)
		case <-ctx.Done():
			return fmt.Errorf("volume %s: %w", id, ctx.Err())
		}
	}
}

// createDelete is `volume create` then `volume delete` of volume i.
func (w *volumeWatch) createDelete(ctx context.Context, plugin string, i int) error {
	id := w.id(i)
	// JSON, as a program using the API sends it (the CLI sends the file's
	// text, which the agent parses; that costs little beside the rest).
	if _, err := w.a.client.CreateVolume(ctx, benchVolume(id, plugin)); err != nil {
		return fmt.Errorf("create %s: %w", id, err)
	}
	err := w.wait(ctx, id, func(ev *api.Event) (bool, error) {
		v := ev.Payload.Volume
		switch {
		case ev.Type != "VolumeUpdated" || v == nil:
			return false, fmt.Errorf("volume %s: unexpected %s event", id, ev.Type)
		case v.State == api.VolumeStateFailed:
			return false, fmt.Errorf("volume %s failed: %s", id, v.LastError)
		}
		return v.State == api.VolumeStateReady, nil
	})
	if err != nil {
		return err
	}
	if _, err := w.a.client.DeleteVolume(ctx, id); err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	return w.wait(ctx, id, func(ev *api.Event) (bool, error) {
		if v := ev.Payload.Volume; ev.Type == "VolumeUpdated" && v != nil && v.State == api.VolumeStateFailed {
			return false, fmt.Errorf("volume %s: delete failed: %s", id, v.LastError)
		}
		return ev.Type == "VolumeDeleted", nil
	})
}

// benchVolume is the volume the benchmarks create through the API: 1 MiB,
// one single-node-writer file-system capability.
func benchVolume(id, plugin string) *api.CSIVolume {
	return &api.CSIVolume{ID: id, PluginID: plugin, RequestedCapacityMin: 1 << 20,
		RequestedCapabilities: []*api.CSIVolumeCapability{{AccessMode: "single-node-writer", AttachmentMode: "file-system"}}}
}

// benchVolumeHCL is the volume both sides create: 1 MiB, one file-system
// capability (id, plugin ID).
const benchVolumeHCL = `id           = %q
type         = "csi"
plugin_id    = %q
capacity_min = "1MiB"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
`

// bareCreateDelete is the CSI calls the agent makes for one volume of
// BenchmarkVolumes100, made directly.
func bareCreateDelete(ctx context.Context, ctl csipb.ControllerClient, name string) error {
	resp, err := ctl.CreateVolume(ctx, &csipb.CreateVolumeRequest{
		Name:          name,
		CapacityRange: &csipb.CapacityRange{RequiredBytes: 1 << 20},
		VolumeCapabilities: []*csipb.VolumeCapability{{
			AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}},
			AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		}},
	})
	if err != nil {
		return fmt.Errorf("bare create %s: %w", name, err)
	}
	if _, err := ctl.DeleteVolume(ctx, &csipb.DeleteVolumeRequest{VolumeId: resp.GetVolume().GetVolumeId()}); err != nil {
		return fmt.Errorf("bare delete %s: %w", name, err)
	}
	return nil
}
