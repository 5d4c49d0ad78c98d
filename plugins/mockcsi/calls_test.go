package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/pluginhost/pluginhost/sdk/sdktest"
)

// startDelayedDriver serves a driver whose methods answer after delays.
func startDelayedDriver(t *testing.T, delays map[string]time.Duration) (*driver, *sdktest.Plugin) {
	t.Helper()
	opts := testOptions(shortTempDir(t))
	opts.Faults = faultConfig{Delay: delays}
	return startDriver(t, opts)
}

// waitInFlight waits until n CSI calls are in flight.
func waitInFlight(t *testing.T, d *driver, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for d.calls.snapshot().InFlight != n {
		if time.Now().After(deadline) {
			t.Fatalf("in flight: %d calls, want %d", d.calls.snapshot().InFlight, n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// readCalls reads calls.json as a test in another process would: once
// every call has ended in the plugin, which may be a moment after its
// caller gave up on it.
func readCalls(t *testing.T, stateDir string) callsFile {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(stateDir, callsFileName))
		if err != nil && !os.IsNotExist(err) {
			t.Fatalf("read %s: %v", callsFileName, err)
		}
		var c callsFile
		if err == nil {
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatalf("decode %s: %v\n%s", callsFileName, err, b)
			}
			if c.InFlight == 0 {
				return c
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still has calls in flight after 10s: %s", callsFileName, b)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A call that the per-volume lock turns away with ABORTED was still sent
// while another was in flight: the record counts it.
func TestCallRecordCountsOverlapTheLockRejects(t *testing.T) {
	d, p := startDelayedDriver(t, map[string]time.Duration{"ControllerExpandVolume": time.Hour})
	id := createVolume(t, p, "a", 1<<20).GetVolumeId()
	release, err := d.store.acquire("volume/" + id)
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := p.Controller.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{
			VolumeId: id, CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 20}})
		done <- err
	}()
	waitInFlight(t, d, 1)
	_, err = p.Controller.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: id})
	wantCode(t, err, codes.Aborted)
	cancel()
	wantCode(t, <-done, codes.Canceled)
	release()

	got := readCalls(t, d.store.dir)
	want := callsFile{
		Overlaps:         1,
		OverlapsByVolume: map[string]int64{"a": 1},
		MaxParallel:      2,
		Calls:            map[string]int64{"CreateVolume": 1, "ControllerExpandVolume": 1, "DeleteVolume": 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("calls.json = %+v, want %+v", got, want)
	}
}

// CreateVolume is keyed by name and later calls by ID; both land on the
// same key, also for CreateSnapshot (by its source volume), and the ID
// stays known after the volume is deleted.
func TestCallRecordKeysAVolumeOneWay(t *testing.T) {
	d, p := startDelayedDriver(t, map[string]time.Duration{"CreateVolume": time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := p.Controller.CreateVolume(ctx, &csi.CreateVolumeRequest{
			Name: "a", VolumeCapabilities: []*csi.VolumeCapability{mountCap}, CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20}})
		done <- err
	}()
	waitInFlight(t, d, 1)
	// The volume is committed while its CreateVolume waits out the delay;
	// a caller can find its ID by listing.
	var id string
	for id == "" {
		list, err := p.Controller.ListVolumes(context.Background(), &csi.ListVolumesRequest{})
		if err != nil {
			t.Fatalf("ListVolumes: %v", err)
		}
		if len(list.GetEntries()) == 1 {
			id = list.GetEntries()[0].GetVolume().GetVolumeId()
		}
		time.Sleep(2 * time.Millisecond)
	}
	if _, err := p.Controller.ControllerGetVolume(context.Background(), &csi.ControllerGetVolumeRequest{VolumeId: id}); err != nil {
		t.Fatalf("ControllerGetVolume: %v", err)
	}
	if _, err := p.Controller.CreateSnapshot(context.Background(), &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: id}); err != nil {
		t.Fatalf("CreateSnapshot: %v", err)
	}
	cancel()
	wantCode(t, <-done, codes.Canceled)
	if got := d.calls.snapshot(); got.Overlaps != 2 || got.OverlapsByVolume["a"] != 2 || len(got.OverlapsByVolume) != 1 {
		t.Fatalf("record = %+v, want 2 overlaps, both on volume a", got)
	}
	if _, err := p.Controller.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: id}); err != nil {
		t.Fatalf("DeleteVolume: %v", err)
	}
	if got := d.calls.key(&csi.DeleteVolumeRequest{VolumeId: id}); got != "a" {
		t.Fatalf("key of deleted volume %s = %q, want a", id, got)
	}
	if got := d.calls.key(&csi.DeleteVolumeRequest{VolumeId: "vol-unknown"}); got != "vol-unknown" {
		t.Fatalf("key of unknown ID = %q, want the ID", got)
	}
	if got := d.calls.key(&csi.ListVolumesRequest{}); got != "" {
		t.Fatalf("ListVolumes has key %q, want none", got)
	}
}

// Calls on different volumes in flight together are no overlap, and show
// in MaxParallel.
func TestCallRecordParallelVolumes(t *testing.T) {
	d, p := startDelayedDriver(t, map[string]time.Duration{"CreateVolume": time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for _, name := range []string{"a", "b", "c", "d"} {
		wg.Go(func() {
			_, err := p.Controller.CreateVolume(ctx, &csi.CreateVolumeRequest{
				Name: name, VolumeCapabilities: []*csi.VolumeCapability{mountCap}, CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20}})
			errs <- err
		})
	}
	waitInFlight(t, d, 4)
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		wantCode(t, err, codes.Canceled)
	}
	got := readCalls(t, d.store.dir)
	if got.Overlaps != 0 || got.MaxParallel != 4 || got.InFlight != 0 || got.Calls["CreateVolume"] != 4 {
		t.Fatalf("calls.json = %+v, want 4 CreateVolume, 0 overlaps, MaxParallel 4", got)
	}
}

// Once calls stop, calls.json is the exact record, however the calls'
// ends raced to write it. Calls naming no volume are counted by method
// but are not in flight on any volume; health checks are not CSI calls.
func TestCallRecordFileIsExact(t *testing.T) {
	d, p := startDriver(t, testOptions(shortTempDir(t)))
	ctx := context.Background()
	const workers, gets = 8, 10
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			resp, err := p.Controller.CreateVolume(ctx, &csi.CreateVolumeRequest{
				Name: "v" + string(rune('a'+w)), VolumeCapabilities: []*csi.VolumeCapability{mountCap}, CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20}})
			if err != nil {
				t.Errorf("CreateVolume: %v", err)
				return
			}
			for range gets {
				if _, err := p.Controller.ControllerGetVolume(ctx, &csi.ControllerGetVolumeRequest{VolumeId: resp.GetVolume().GetVolumeId()}); err != nil {
					t.Errorf("ControllerGetVolume: %v", err)
				}
				if _, err := p.Identity.Probe(ctx, &csi.ProbeRequest{}); err != nil {
					t.Errorf("Probe: %v", err)
				}
			}
		})
	}
	wg.Wait()
	if _, err := healthpb.NewHealthClient(p.Conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "plugin"}); err != nil {
		t.Fatalf("health check: %v", err)
	}
	got := readCalls(t, d.store.dir)
	if !reflect.DeepEqual(got, d.calls.snapshot()) {
		t.Fatalf("calls.json = %+v, record in memory %+v", got, d.calls.snapshot())
	}
	want := map[string]int64{"CreateVolume": workers, "ControllerGetVolume": workers * gets, "Probe": workers * gets}
	if !reflect.DeepEqual(got.Calls, want) || got.Overlaps != 0 || got.InFlight != 0 || got.MaxParallel > workers {
		t.Fatalf("calls.json = %+v, want calls %v, no overlaps, nothing in flight, MaxParallel <= %d", got, want, workers)
	}
}

// The record covers the state dir's life: a restarted plugin continues it,
// with nothing in flight. A record that cannot be read stops the start.
func TestCallRecordSurvivesRestart(t *testing.T) {
	opts := testOptions(shortTempDir(t))
	d, p := startDriver(t, opts)
	createVolume(t, p, "a", 1<<20)
	before := d.calls.snapshot()
	d.close()

	d2, err := newDriver(opts, hclog.NewNullLogger(), func(code int) { t.Errorf("exit(%d)", code) })
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(d2.close)
	if got := d2.calls.snapshot(); !reflect.DeepEqual(got, before) {
		t.Fatalf("record after restart = %+v, want %+v", got, before)
	}
	d2.close()

	if err := os.WriteFile(filepath.Join(opts.StateDir, callsFileName), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if d3, err := newDriver(opts, hclog.NewNullLogger(), nil); err == nil {
		d3.close()
		t.Fatalf("newDriver accepted a corrupt %s", callsFileName)
	}
}
