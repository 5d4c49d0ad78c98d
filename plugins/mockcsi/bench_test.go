package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/sdk/sdktest"
)

// benchDriver is startDriver for benchmarks.
func benchDriver(b *testing.B, dir string) *sdktest.Plugin {
	b.Helper()
	opts := testOptions(dir)
	opts.RecordCalls = false // the benchmark measures the driver, not the test record
	d, err := newDriver(opts, hclog.NewNullLogger(), func(int) {})
	if err != nil {
		b.Fatalf("newDriver: %v", err)
	}
	b.Cleanup(d.close)
	return serveDriver(b, d)
}

// BenchmarkProbe is the floor: one unary RPC through the call record and
// the fault hook. The record's file replace is most of it.
func BenchmarkProbe(b *testing.B) {
	p := benchDriver(b, b.TempDir())
	ctx := context.Background()
	for b.Loop() {
		if _, err := p.Identity.Probe(ctx, &csi.ProbeRequest{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreateDeleteVolume costs two durable state commits (each a
// write, two fsyncs and a rename) plus a mkdir and a removal.
func BenchmarkCreateDeleteVolume(b *testing.B) {
	p := benchDriver(b, b.TempDir())
	ctx := context.Background()
	i := 0
	for b.Loop() {
		i++
		v, err := p.Controller.CreateVolume(ctx, &csi.CreateVolumeRequest{
			Name: fmt.Sprintf("v%d", i), VolumeCapabilities: []*csi.VolumeCapability{mountCap},
			CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20},
		})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.GetVolume().GetVolumeId()}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNodeAttachCycle is stage + publish + unpublish + unstage: four
// commits and four mount operations.
func BenchmarkNodeAttachCycle(b *testing.B) {
	dir := b.TempDir()
	p := benchDriver(b, dir)
	ctx := context.Background()
	v, err := p.Controller.CreateVolume(ctx, &csi.CreateVolumeRequest{
		Name: "bench", VolumeCapabilities: []*csi.VolumeCapability{mountCap},
	})
	if err != nil {
		b.Fatal(err)
	}
	id := v.GetVolume().GetVolumeId()
	staging, target := filepath.Join(dir, "staging"), filepath.Join(dir, "target")
	if err := os.Mkdir(staging, 0o750); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = unmountAll(target); _ = unmountAll(staging) })
	for b.Loop() {
		if _, err := p.Node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: staging, VolumeCapability: mountCap}); err != nil {
			b.Fatal(err)
		}
		if _, err := p.Node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, StagingTargetPath: staging, TargetPath: target, VolumeCapability: mountCap}); err != nil {
			b.Fatal(err)
		}
		if _, err := p.Node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target}); err != nil {
			b.Fatal(err)
		}
		if _, err := p.Node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging}); err != nil {
			b.Fatal(err)
		}
	}
}
