package main

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pluginhost/pluginhost/sdk/sdktest"
)

const testNode = "test-node"

func testOptions(dir string) options {
	return options{
		DriverName:  defaultDriverName,
		NodeID:      testNode,
		StateDir:    filepath.Join(dir, "state"),
		Capacity:    1 << 30,
		MountMethod: mountAuto,
		RecordCalls: true,
	}
}

// startDriver serves a driver in-process over a real unix socket through
// the sdk's test harness.
func startDriver(t *testing.T, opts options) (*driver, *sdktest.Plugin) {
	t.Helper()
	d, err := newDriver(opts, hclog.NewNullLogger(), func(code int) { t.Errorf("driver called exit(%d)", code) })
	if err != nil {
		t.Fatalf("newDriver: %v", err)
	}
	t.Cleanup(d.close)
	return d, serveDriver(t, d)
}

// serveDriver serves d as the binary does, faults interceptor included,
// in-process over a real unix socket.
func serveDriver(t testing.TB, d *driver) *sdktest.Plugin {
	t.Helper()
	cfg := d.sdkConfig()
	cfg.Logger = hclog.NewNullLogger()
	return sdktest.StartInProcess(t, cfg)
}

var mountCap = &csi.VolumeCapability{
	AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
	AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
}

func createVolume(t *testing.T, p *sdktest.Plugin, name string, size int64) *csi.Volume {
	t.Helper()
	resp, err := p.Controller.CreateVolume(context.Background(), &csi.CreateVolumeRequest{
		Name:               name,
		VolumeCapabilities: []*csi.VolumeCapability{mountCap},
		CapacityRange:      &csi.CapacityRange{RequiredBytes: size},
	})
	if err != nil {
		t.Fatalf("CreateVolume %s: %v", name, err)
	}
	return resp.GetVolume()
}

func wantCode(t *testing.T, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("got %v, want %s", err, code)
	}
}

// stagePublish stages vol under dir and publishes it at dir/target.
func stagePublish(t *testing.T, p *sdktest.Plugin, vol, dir string, readonly bool) (staging, target string) {
	t.Helper()
	ctx := context.Background()
	staging, target = filepath.Join(dir, "staging"), filepath.Join(dir, "target")
	if err := os.MkdirAll(staging, 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{
		VolumeId: vol, StagingTargetPath: staging, VolumeCapability: mountCap,
	}); err != nil {
		t.Fatalf("NodeStageVolume: %v", err)
	}
	if _, err := p.Node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{
		VolumeId: vol, StagingTargetPath: staging, TargetPath: target, VolumeCapability: mountCap, Readonly: readonly,
	}); err != nil {
		t.Fatalf("NodePublishVolume: %v", err)
	}
	return staging, target
}

func TestCapacityIsAccounted(t *testing.T) {
	dir := shortTempDir(t)
	opts := testOptions(dir)
	opts.Capacity = 100 << 20
	_, p := startDriver(t, opts)
	ctx := context.Background()

	free := func() int64 {
		r, err := p.Controller.GetCapacity(ctx, &csi.GetCapacityRequest{})
		if err != nil {
			t.Fatalf("GetCapacity: %v", err)
		}
		return r.GetAvailableCapacity()
	}
	if got := free(); got != 100<<20 {
		t.Fatalf("free = %d, want %d", got, 100<<20)
	}
	v := createVolume(t, p, "a", 60<<20)
	if v.GetCapacityBytes() != 60<<20 {
		t.Fatalf("capacity = %d, want %d", v.GetCapacityBytes(), 60<<20)
	}
	if got := free(); got != 40<<20 {
		t.Fatalf("free after create = %d, want %d", got, 40<<20)
	}
	_, err := p.Controller.CreateVolume(ctx, &csi.CreateVolumeRequest{
		Name: "b", VolumeCapabilities: []*csi.VolumeCapability{mountCap},
		CapacityRange: &csi.CapacityRange{RequiredBytes: 50 << 20},
	})
	wantCode(t, err, codes.OutOfRange)
	_, err = p.Controller.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{
		VolumeId: v.GetVolumeId(), CapacityRange: &csi.CapacityRange{RequiredBytes: 101 << 20},
	})
	wantCode(t, err, codes.OutOfRange)
	_, err = p.Controller.CreateVolume(ctx, &csi.CreateVolumeRequest{
		Name: "c", VolumeCapabilities: []*csi.VolumeCapability{mountCap},
		CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 20, LimitBytes: 1 << 20},
	})
	wantCode(t, err, codes.OutOfRange)
	if _, err := p.Controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()}); err != nil {
		t.Fatalf("DeleteVolume: %v", err)
	}
	if got := free(); got != 100<<20 {
		t.Fatalf("free after delete = %d, want %d", got, 100<<20)
	}
}

func TestBlockAccessIsRefused(t *testing.T) {
	_, p := startDriver(t, testOptions(shortTempDir(t)))
	_, err := p.Controller.CreateVolume(context.Background(), &csi.CreateVolumeRequest{
		Name: "blk",
		VolumeCapabilities: []*csi.VolumeCapability{{
			AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
			AccessMode: mountCap.AccessMode,
		}},
	})
	wantCode(t, err, codes.InvalidArgument)
}

// TestListVolumesPagination checks that tokens name a position, not an
// offset: deleting the last volume of a page does not skip the next one.
func TestListVolumesPagination(t *testing.T) {
	_, p := startDriver(t, testOptions(shortTempDir(t)))
	ctx := context.Background()
	want := map[string]bool{}
	for _, n := range []string{"v1", "v2", "v3", "v4", "v5"} {
		want[createVolume(t, p, n, 1<<20).GetVolumeId()] = true
	}
	first, err := p.Controller.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: 2})
	if err != nil {
		t.Fatalf("ListVolumes: %v", err)
	}
	if len(first.GetEntries()) != 2 || first.GetNextToken() == "" {
		t.Fatalf("first page: %d entries, token %q", len(first.GetEntries()), first.GetNextToken())
	}
	seen := map[string]bool{}
	for _, e := range first.GetEntries() {
		seen[e.GetVolume().GetVolumeId()] = true
	}
	last := first.GetEntries()[1].GetVolume().GetVolumeId()
	if _, err := p.Controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: last}); err != nil {
		t.Fatalf("DeleteVolume: %v", err)
	}
	rest, err := p.Controller.ListVolumes(ctx, &csi.ListVolumesRequest{StartingToken: first.GetNextToken()})
	if err != nil {
		t.Fatalf("ListVolumes page 2: %v", err)
	}
	for _, e := range rest.GetEntries() {
		seen[e.GetVolume().GetVolumeId()] = true
	}
	if len(seen) != 5 || rest.GetNextToken() != "" {
		t.Fatalf("saw %d distinct volumes over two pages (want all 5), next token %q", len(seen), rest.GetNextToken())
	}
	_, err = p.Controller.ListVolumes(ctx, &csi.ListVolumesRequest{StartingToken: "bogus"})
	wantCode(t, err, codes.Aborted)
}

// TestListVolumesPages walks every page as a CO does: max_entries bounds
// each page, next_token is empty exactly on the last, and the pages
// together list each volume once.
func TestListVolumesPages(t *testing.T) {
	_, p := startDriver(t, testOptions(shortTempDir(t)))
	ctx := context.Background()
	want := map[string]bool{}
	for _, n := range []string{"v1", "v2", "v3", "v4", "v5"} {
		want[createVolume(t, p, n, 1<<20).GetVolumeId()] = true
	}
	seen := map[string]bool{}
	var sizes []int
	token := ""
	for {
		resp, err := p.Controller.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: 2, StartingToken: token})
		if err != nil {
			t.Fatalf("ListVolumes after %v: %v", sizes, err)
		}
		sizes = append(sizes, len(resp.GetEntries()))
		for _, e := range resp.GetEntries() {
			id := e.GetVolume().GetVolumeId()
			if seen[id] {
				t.Fatalf("volume %s listed twice", id)
			}
			seen[id] = true
		}
		if token = resp.GetNextToken(); token == "" {
			break
		}
		if len(sizes) > 5 {
			t.Fatalf("no last page after %v", sizes)
		}
	}
	if !slices.Equal(sizes, []int{2, 2, 1}) || !maps.Equal(seen, want) {
		t.Fatalf("pages of %v listing %v, want pages of [2 2 1] listing %v", sizes, seen, want)
	}
	// A page big enough for everything has no next token.
	all, err := p.Controller.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: 5})
	if err != nil || len(all.GetEntries()) != 5 || all.GetNextToken() != "" {
		t.Fatalf("max_entries=5: %d entries, token %q, %v", len(all.GetEntries()), all.GetNextToken(), err)
	}
	_, err = p.Controller.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: -1})
	wantCode(t, err, codes.InvalidArgument)
}

// TestSnapshotAndCloneCopyContent writes a file into a volume and expects
// it in a snapshot's restore and in a clone, and a later write to the
// source to stay out of both.
func TestSnapshotAndCloneCopyContent(t *testing.T) {
	d, p := startDriver(t, testOptions(shortTempDir(t)))
	ctx := context.Background()
	src := createVolume(t, p, "src", 1<<20)
	if err := os.WriteFile(filepath.Join(d.store.volumeDir(src.GetVolumeId()), "data"), []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap, err := p.Controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: src.GetVolumeId()})
	if err != nil {
		t.Fatalf("CreateSnapshot: %v", err)
	}
	clone, err := p.Controller.CreateVolume(ctx, &csi.CreateVolumeRequest{
		Name: "clone", VolumeCapabilities: []*csi.VolumeCapability{mountCap},
		VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
			Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: src.GetVolumeId()}}},
	})
	if err != nil {
		t.Fatalf("clone: %v", err)
	}
	if err := os.WriteFile(filepath.Join(d.store.volumeDir(src.GetVolumeId()), "data"), []byte("v2"), 0o644); err != nil {
		t.Fatal(err)
	}
	restored, err := p.Controller.CreateVolume(ctx, &csi.CreateVolumeRequest{
		Name: "restored", VolumeCapabilities: []*csi.VolumeCapability{mountCap},
		VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.GetSnapshot().GetSnapshotId()}}},
	})
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	for _, v := range []*csi.Volume{clone.GetVolume(), restored.GetVolume()} {
		b, err := os.ReadFile(filepath.Join(d.store.volumeDir(v.GetVolumeId()), "data"))
		if err != nil || string(b) != "v1" {
			t.Fatalf("volume %s data = %q, %v; want v1", v.GetVolumeId(), b, err)
		}
	}
	// The snapshot outlives its source.
	if _, err := p.Controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: src.GetVolumeId()}); err != nil {
		t.Fatalf("DeleteVolume: %v", err)
	}
	if _, err := p.Controller.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: snap.GetSnapshot().GetSnapshotId()}); err != nil {
		t.Fatalf("GetSnapshot after source deletion: %v", err)
	}
}

// TestInFlightOperationAborts holds a volume's key as a running operation
// would and expects the CSI "retry later" answer, not a wait.
func TestInFlightOperationAborts(t *testing.T) {
	d, p := startDriver(t, testOptions(shortTempDir(t)))
	v := createVolume(t, p, "busy", 1<<20)
	release, err := d.store.acquire("volume/" + v.GetVolumeId())
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	_, err = p.Controller.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()})
	wantCode(t, err, codes.Aborted)
	release()
	if _, err := p.Controller.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()}); err != nil {
		t.Fatalf("DeleteVolume after release: %v", err)
	}
}

func TestPublishedVolumeIsNotDeleted(t *testing.T) {
	_, p := startDriver(t, testOptions(shortTempDir(t)))
	ctx := context.Background()
	v := createVolume(t, p, "pub", 1<<20)
	if _, err := p.Controller.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{
		VolumeId: v.GetVolumeId(), NodeId: testNode, VolumeCapability: mountCap,
	}); err != nil {
		t.Fatalf("ControllerPublishVolume: %v", err)
	}
	_, err := p.Controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()})
	wantCode(t, err, codes.FailedPrecondition)
}

// TestBindMountPublish checks that publish is a real bind mount (a file
// written through the target lands in the volume), that readonly is
// enforced, and that unpublish/unstage leave no mount behind.
func TestBindMountPublish(t *testing.T) {
	dir := shortTempDir(t)
	unmountUnder(t, dir)
	d, p := startDriver(t, testOptions(dir))
	ctx := context.Background()
	v := createVolume(t, p, "m", 1<<20)
	staging, target := stagePublish(t, p, v.GetVolumeId(), dir, false)
	if ok, err := isMountpoint(target); err != nil || !ok {
		t.Skipf("publish did not mount (mounting not permitted here?): %v", err)
	}
	if err := os.WriteFile(filepath.Join(target, "f"), []byte("x"), 0o644); err != nil {
		t.Fatalf("write through target: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(d.store.volumeDir(v.GetVolumeId()), "f")); err != nil || string(b) != "x" {
		t.Fatalf("file not in volume dir: %q, %v", b, err)
	}
	stats, err := p.Node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: v.GetVolumeId(), VolumePath: target})
	if err != nil || stats.GetUsage()[0].GetUsed() != 1 || stats.GetUsage()[0].GetTotal() != 1<<20 {
		t.Fatalf("stats = %v, %v; want 1 byte used of %d", stats, err, 1<<20)
	}

	ro := filepath.Join(dir, "ro")
	if _, err := p.Node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{
		VolumeId: v.GetVolumeId(), StagingTargetPath: staging, TargetPath: ro, VolumeCapability: mountCap, Readonly: true,
	}); err != nil {
		t.Fatalf("read-only publish: %v", err)
	}
	if err := os.WriteFile(filepath.Join(ro, "g"), []byte("x"), 0o644); err == nil {
		t.Fatalf("write through a read-only publish succeeded")
	}
	// Same target, other options: the spec's ALREADY_EXISTS.
	_, err = p.Node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{
		VolumeId: v.GetVolumeId(), StagingTargetPath: staging, TargetPath: ro, VolumeCapability: mountCap, Readonly: false,
	})
	wantCode(t, err, codes.AlreadyExists)

	_, err = p.Node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: v.GetVolumeId(), StagingTargetPath: staging})
	wantCode(t, err, codes.FailedPrecondition)
	for _, tp := range []string{target, ro} {
		if _, err := p.Node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: v.GetVolumeId(), TargetPath: tp}); err != nil {
			t.Fatalf("unpublish %s: %v", tp, err)
		}
		if _, err := os.Lstat(tp); !os.IsNotExist(err) {
			t.Fatalf("target %s still exists after unpublish: %v", tp, err)
		}
	}
	if _, err := p.Node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: v.GetVolumeId(), StagingTargetPath: staging}); err != nil {
		t.Fatalf("unstage: %v", err)
	}
	if ok, _ := isMountpoint(staging); ok {
		t.Fatalf("staging path still mounted after unstage")
	}
}

// TestSymlinkFallback runs the documented fallback for hosts where mounting
// is not permitted.
func TestSymlinkFallback(t *testing.T) {
	dir := shortTempDir(t)
	unmountUnder(t, dir)
	opts := testOptions(dir)
	opts.MountMethod = mountSymlink
	d, p := startDriver(t, opts)
	v := createVolume(t, p, "l", 1<<20)
	staging, target := stagePublish(t, p, v.GetVolumeId(), dir, false)
	if ok, _ := isMountpoint(staging); ok {
		t.Fatalf("symlink mode mounted the staging path")
	}
	dest, err := os.Readlink(target)
	if err != nil || dest != d.store.volumeDir(v.GetVolumeId()) {
		t.Fatalf("target link = %q, %v; want %s", dest, err, d.store.volumeDir(v.GetVolumeId()))
	}
	// Publishing again is idempotent.
	if _, err := p.Node.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: v.GetVolumeId(), StagingTargetPath: staging, TargetPath: target, VolumeCapability: mountCap,
	}); err != nil {
		t.Fatalf("second publish: %v", err)
	}
	if _, err := p.Node.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: v.GetVolumeId(), TargetPath: target}); err != nil {
		t.Fatalf("unpublish: %v", err)
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Fatalf("link still there after unpublish: %v", err)
	}
}

// TestSecondProcessOnStateDirShares: a second mockcsi on the same state
// dir (the new allocation of a plugin job's update, before the old one
// stops) starts and knows the first one's volumes.
func TestSecondProcessOnStateDirShares(t *testing.T) {
	opts := testOptions(shortTempDir(t))
	_, p := startDriver(t, opts)
	v := createVolume(t, p, "shared", 1<<20)
	d2, err := newDriver(opts, hclog.NewNullLogger(), nil)
	if err != nil {
		t.Fatalf("second driver on the same state dir: %v", err)
	}
	defer d2.close()
	if name, ok := d2.store.volumeName(v.GetVolumeId()); !ok || name != "shared" {
		t.Fatalf("second driver sees volume %q (%v), want \"shared\"", name, ok)
	}
}

// TestPublishRestoresLostMounts simulates a reboot: the records survive but
// the mounts do not. Repeating stage and publish, as a CO does, must bring
// the volume's content back at the target, not an empty directory.
func TestPublishRestoresLostMounts(t *testing.T) {
	dir := shortTempDir(t)
	unmountUnder(t, dir)
	d, p := startDriver(t, testOptions(dir))
	v := createVolume(t, p, "reboot", 1<<20)
	if err := os.WriteFile(filepath.Join(d.store.volumeDir(v.GetVolumeId()), "f"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	staging, target := stagePublish(t, p, v.GetVolumeId(), dir, false)
	if ok, _ := isMountpoint(target); !ok {
		t.Skip("mounting not permitted here")
	}
	for _, path := range []string{target, staging} {
		if err := unmountAll(path); err != nil {
			t.Fatal(err)
		}
	}
	// Publish alone, as a CO that believes the volume is still staged.
	if _, err := p.Node.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: v.GetVolumeId(), StagingTargetPath: staging, TargetPath: target, VolumeCapability: mountCap,
	}); err != nil {
		t.Fatalf("publish after lost mounts: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(target, "f")); err != nil || string(b) != "kept" {
		t.Fatalf("target content = %q, %v; want the volume's file", b, err)
	}
}
