package volumes

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/csi"
	"github.com/pluginhost/pluginhost/csi/internal/csitest"
	"github.com/pluginhost/pluginhost/dynamic"
)

// The benchmark runs over memVolumeStore (volumes_test.go): the agent's
// store is host/state's bbolt file, which csi must not import, so it
// measures the queue and the plugin, not durability.

// queueVolumes is how many volumes BenchmarkVolumeQueue1000 queues.
const queueVolumes = 1000

// queueLatency is mockcsi's added latency per CSI call in
// BenchmarkVolumeQueue1000: a plugin that talks to a storage backend.
const queueLatency = 10 * time.Millisecond

// BenchmarkVolumeQueue1000 queues 1,000 volume creations into a
// VolumeManager (an in-memory VolumeStore, see memVolumeStore) over a real
// dynamic registry and Manager, against the real mockcsi binary with
// MOCKCSI_LATENCY=10ms, and times them until every volume is ready. In the
// same run the same 1,000 go through a manager with Workers: 1, one at a
// time. ns/op is the queue (DefaultVolumeWorkers); serial-ns/op the one at
// a time and x-faster their ratio (goal ≥ 8).
//
// The bare-ns/call metric is mockcsi's own cost of a CreateVolume with no
// latency, called one at a time at the same state size: mockcsi rewrites
// and fsyncs its whole state file under one lock per change, so this part
// of every call is serialized in the plugin whatever the caller does, and
// 1,000 of them bound the queue from below.
func BenchmarkVolumeQueue1000(b *testing.B) {
	// mockcsi is a real plugin binary, but its own work is serialized
	// (one JSON state file rewritten per change), which caps what any
	// number of workers can gain; the fake plugin adds only the latency,
	// which is what the queue's parallelism is for.
	b.Run("mockcsi", func(b *testing.B) {
		socket := csitest.StartMockCSI(b, "MOCKCSI_LATENCY="+queueLatency.String())
		benchQueue(b, socket, true)
	})
	b.Run("fake", func(b *testing.B) {
		p := csitest.NewFakePlugin()
		p.Latency = queueLatency
		benchQueue(b, csitest.Serve(b, p, "").Socket, false)
	})
}

func benchQueue(b *testing.B, socket string, mockcsi bool) {
	h := newVolHarness(b)
	for _, typ := range []string{dynamic.PluginTypeCSIController, dynamic.PluginTypeCSINode} {
		if err := h.reg.Register(csitest.Info(typ, "mock", "alloc-1", socket)); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.m.WaitReady(ctx); err != nil {
		b.Fatal(err)
	}
	if st, ok := h.m.Plugin("mock"); !ok || st.ControllersHealthy != 1 {
		b.Fatal("the plugin's controller is not healthy")
	}
	// Deletes between runs go straight to the plugin, in parallel, so that
	// every run starts at the same (empty) plugin state.
	direct := testClient(b, socket, csi.RetryPolicy{})

	var perCall time.Duration
	if mockcsi {
		// The plugin's serialized part, without latency, on a second mockcsi.
		bareSocket := csitest.StartMockCSI(b)
		bare := testClient(b, bareSocket, csi.RetryPolicy{})
		perCall = mockcsiCreateCost(b, bare, queueVolumes)
	}

	var queued, serial time.Duration
	run := 0
	for b.Loop() {
		b.StopTimer()
		run++
		prefix := fmt.Sprintf("r%d-", run)
		b.StartTimer()
		start := time.Now()
		ids := queueAndWait(b, h.m, DefaultVolumeWorkers, prefix+"q-")
		queued += time.Since(start)
		b.StopTimer()
		deleteDirect(b, direct, ids)

		start = time.Now()
		ids = queueAndWait(b, h.m, 1, prefix+"s-")
		serial += time.Since(start)
		deleteDirect(b, direct, ids)
		b.StartTimer()
	}
	b.ReportMetric(float64(serial.Nanoseconds())/float64(run), "serial-ns/op")
	b.ReportMetric(float64(serial)/float64(queued), "x-faster")
	if mockcsi {
		b.ReportMetric(float64(perCall.Nanoseconds()), "bare-ns/call")
	}
}

// queueAndWait runs a VolumeManager with workers over a fresh store,
// requests queueVolumes creations and returns when all are ready, with the
// volumes' external IDs.
func queueAndWait(b *testing.B, plugins PluginSource, workers int, prefix string) []string {
	b.Helper()
	var ready atomic.Int64
	done := make(chan struct{})
	store := newMemVolumeStore()
	vm, err := NewVolumeManager(VolumeManagerConfig{
		Store: store, Plugins: plugins, Logger: hclog.NewNullLogger(), Workers: workers,
		OnChange: func(v *Volume, deleted bool) {
			if deleted {
				return
			}
			switch v.State {
			case StateFailed:
				b.Errorf("volume %s failed: %s", v.ID, v.LastError)
			case StateReady:
				if ready.Add(1) == queueVolumes {
					close(done)
				}
			}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		vm.Wait()
	}()
	if err := vm.Start(ctx); err != nil {
		b.Fatal(err)
	}
	for i := range queueVolumes {
		v := &Volume{ID: fmt.Sprintf("%s%04d", prefix, i), PluginID: "mock",
			RequestedCapacityMin:  1 << 20,
			RequestedCapabilities: []*VolumeCapability{{AccessMode: "single-node-writer", AttachmentMode: "file-system"}}}
		if _, err := vm.Create(v); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("%d of %d volumes ready after 5 minutes", ready.Load(), queueVolumes)
	}
	vols, err := store.Volumes()
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]string, len(vols))
	for i, v := range vols {
		ids[i] = v.ExternalID
	}
	return ids
}

// deleteDirect deletes volumes at the plugin, 16 at a time.
func deleteDirect(b *testing.B, c *csi.Client, ids []string) {
	b.Helper()
	work := make(chan string)
	var wg sync.WaitGroup
	for range DefaultVolumeWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				if _, err := c.DeleteVolume(context.Background(), &csipb.DeleteVolumeRequest{VolumeId: id}); err != nil {
					b.Errorf("delete %s: %v", id, err)
				}
			}
		}()
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
}

// mockcsiCreateCost creates n volumes one at a time on a mockcsi without
// latency and returns the mean cost of one CreateVolume, then deletes them.
func mockcsiCreateCost(b *testing.B, c *csi.Client, n int) time.Duration {
	b.Helper()
	ctx := context.Background()
	ids := make([]string, 0, n)
	start := time.Now()
	for i := range n {
		resp, err := c.CreateVolume(ctx, &csipb.CreateVolumeRequest{
			Name:          fmt.Sprintf("bare-%04d", i),
			CapacityRange: &csipb.CapacityRange{RequiredBytes: 1 << 20},
			VolumeCapabilities: []*csipb.VolumeCapability{
				VolumeCapabilityPB(&VolumeCapability{AccessMode: "single-node-writer", AttachmentMode: "file-system"}, nil)},
		})
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, resp.GetVolume().GetVolumeId())
	}
	took := time.Since(start)
	deleteDirect(b, c, ids)
	return took / time.Duration(n)
}
