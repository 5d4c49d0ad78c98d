package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestStateSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := openStore(dir)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if err := os.Mkdir(s.volumeDir("vol-1"), 0o700); err != nil {
		t.Fatal(err)
	}
	err = s.update(func(sf *stateFile) error {
		sf.Volumes["vol-1"] = &volume{ID: "vol-1", Name: "one", CapacityBytes: 42}
		return nil
	})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	// Leftovers of a crash: a half-made copy and a directory whose record
	// was never committed.
	for _, orphan := range []string{s.volumeDir("vol-2"), s.snapshotDir("snap-1") + ".tmp"} {
		if err := os.Mkdir(orphan, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	s.close()

	s, err = openStore(dir)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.close()
	var v *volume
	s.view(func(sf *stateFile) { v = sf.Volumes["vol-1"] })
	if v == nil || v.Name != "one" || v.CapacityBytes != 42 {
		t.Fatalf("after reopen vol-1 = %+v", v)
	}
	for _, orphan := range []string{s.volumeDir("vol-2"), s.snapshotDir("snap-1") + ".tmp"} {
		if _, err := os.Stat(orphan); !os.IsNotExist(err) {
			t.Errorf("orphan %s not removed: %v", orphan, err)
		}
	}
	if _, err := os.Stat(s.volumeDir("vol-1")); err != nil {
		t.Errorf("recorded volume dir removed: %v", err)
	}
}

// TestFailedCommitKeepsMemory makes the commit fail (state.json's name is
// taken by a directory, so the rename fails) and expects memory unchanged.
func TestFailedCommitKeepsMemory(t *testing.T) {
	dir := t.TempDir()
	s, err := openStore(dir)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer s.close()
	if err := os.Mkdir(s.statePath(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.statePath(), "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err = s.update(func(sf *stateFile) error {
		sf.Volumes["v"] = &volume{ID: "v"}
		return nil
	})
	if status.Code(err) != codes.Internal {
		t.Fatalf("update = %v, want INTERNAL", err)
	}
	s.view(func(sf *stateFile) {
		if len(sf.Volumes) != 0 {
			t.Fatalf("memory changed by a failed commit: %v", sf.Volumes)
		}
	})
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if len(e.Name()) > 0 && e.Name()[0] == '.' {
			t.Errorf("temp file %s left behind", e.Name())
		}
	}
}

func TestUnreadableStateIsAClearError(t *testing.T) {
	for name, content := range map[string]string{
		"garbage":        "{not json",
		"future version": `{"version": 99}`,
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := openStore(dir); err == nil {
			t.Errorf("%s: opened", name)
		}
		// The state is left alone for a human to look at.
		if b, _ := os.ReadFile(filepath.Join(dir, "state.json")); string(b) != content {
			t.Errorf("%s: state.json rewritten", name)
		}
	}
}

// TestIdempotentAcrossRestart repeats CreateVolume, CreateSnapshot and
// ControllerPublishVolume against a new driver on the same state dir.
func TestIdempotentAcrossRestart(t *testing.T) {
	dir := shortTempDir(t)
	opts := testOptions(dir)
	ctx := context.Background()
	createReq := &csi.CreateVolumeRequest{
		Name: "keep", VolumeCapabilities: []*csi.VolumeCapability{mountCap},
		CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20},
	}
	pubReq := func(id string, ro bool) *csi.ControllerPublishVolumeRequest {
		return &csi.ControllerPublishVolumeRequest{VolumeId: id, NodeId: testNode, VolumeCapability: mountCap, Readonly: ro}
	}

	d1, p1 := startDriver(t, opts)
	v1, err := p1.Controller.CreateVolume(ctx, createReq)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	id := v1.GetVolume().GetVolumeId()
	s1, err := p1.Controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snap", SourceVolumeId: id})
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if _, err := p1.Controller.ControllerPublishVolume(ctx, pubReq(id, false)); err != nil {
		t.Fatalf("publish: %v", err)
	}
	d1.close()

	_, p2 := startDriver(t, opts)
	v2, err := p2.Controller.CreateVolume(ctx, createReq)
	if err != nil || v2.GetVolume().GetVolumeId() != id {
		t.Fatalf("create after restart = %v, %v; want volume %s", v2, err, id)
	}
	s2, err := p2.Controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snap", SourceVolumeId: id})
	if err != nil || s2.GetSnapshot().GetSnapshotId() != s1.GetSnapshot().GetSnapshotId() {
		t.Fatalf("snapshot after restart = %v, %v", s2, err)
	}
	if _, err := p2.Controller.ControllerPublishVolume(ctx, pubReq(id, false)); err != nil {
		t.Fatalf("publish after restart: %v", err)
	}
	_, err = p2.Controller.ControllerPublishVolume(ctx, pubReq(id, true))
	wantCode(t, err, codes.AlreadyExists)
	createReq.CapacityRange.RequiredBytes = 2 << 20
	_, err = p2.Controller.CreateVolume(ctx, createReq)
	wantCode(t, err, codes.AlreadyExists)
}

// TestSharedStateDir: two mockcsi processes on one state dir, as during a
// plugin job's update under pluginhost (the new allocation starts before
// the old one stops), see each other's volumes, and neither loses the
// other's changes. The newcomer leaves the directories alone: a directory
// without a record may be the other's create in flight.
func TestSharedStateDir(t *testing.T) {
	dir := t.TempDir()
	old, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer old.close()
	add := func(s *store, id string) {
		t.Helper()
		if err := s.update(func(sf *stateFile) error {
			sf.Volumes[id] = &volume{ID: id, Name: id}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(s *store) []string {
		var out []string
		s.view(func(sf *stateFile) {
			for id := range sf.Volumes {
				out = append(out, id)
			}
		})
		slices.Sort(out)
		return out
	}
	if err := os.Mkdir(old.volumeDir("v1"), 0o700); err != nil {
		t.Fatal(err)
	}
	add(old, "v1")
	// old is making v2: its directory exists, its record does not yet.
	if err := os.Mkdir(old.volumeDir("v2"), 0o700); err != nil {
		t.Fatal(err)
	}

	updated, err := openStore(dir)
	if err != nil {
		t.Fatalf("second mockcsi on the dir: %v", err)
	}
	if got := ids(updated); !slices.Equal(got, []string{"v1"}) {
		t.Fatalf("the new process sees %v, want [v1]", got)
	}
	if _, err := os.Stat(old.volumeDir("v2")); err != nil {
		t.Fatalf("the new process removed a create in flight: %v", err)
	}
	add(old, "v2")
	add(updated, "v3")
	for name, s := range map[string]*store{"old": old, "new": updated} {
		if got := ids(s); !slices.Equal(got, []string{"v1", "v2", "v3"}) {
			t.Errorf("%s sees %v, want [v1 v2 v3]", name, got)
		}
	}
	old.close()
	updated.close()

	// Alone again, a process cleans up: v4 has no record.
	if err := os.Mkdir(filepath.Join(dir, "volumes", "v4"), 0o700); err != nil {
		t.Fatal(err)
	}
	last, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer last.close()
	if _, err := os.Stat(last.volumeDir("v4")); !os.IsNotExist(err) {
		t.Errorf("orphan v4 kept by a process alone on the dir: %v", err)
	}
	if got := ids(last); !slices.Equal(got, []string{"v1", "v2", "v3"}) {
		t.Errorf("after restart: %v", got)
	}
}
