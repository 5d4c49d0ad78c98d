package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// These tests run the real binary, the way pluginhost's own tests will.

func TestBinaryExitAtStart(t *testing.T) {
	dir := shortTempDir(t)
	p, sock := startBinary(t, dir, []string{envExitAtStart + "=7"}, "--state-dir", filepath.Join(dir, "state"))
	if code := p.exitCode(t, 20*time.Second); code != 7 {
		t.Fatalf("exit code %d, want 7", code)
	}
	// It exited before doing anything.
	for _, path := range []string{sock, filepath.Join(dir, "state")} {
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%s exists after exit-at-start: %v", path, err)
		}
	}
}

func TestBinaryBadFlagExitsWithUsage(t *testing.T) {
	dir := shortTempDir(t)
	p, _ := startBinary(t, dir, []string{envLatency + "=soon"})
	if code := p.exitCode(t, 20*time.Second); code != 2 {
		t.Fatalf("exit code %d, want 2", code)
	}
}

func TestBinaryCrashAfter(t *testing.T) {
	dir := shortTempDir(t)
	p, sock := startBinary(t, dir, []string{envCrashAfter + "=3"}, "--state-dir", filepath.Join(dir, "state"))
	conn := dial(t, sock)
	waitServing(t, p, conn) // one or more calls, all answered
	id := csi.NewIdentityClient(conn)
	var err error
	for i := 0; i < 4 && err == nil; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = id.Probe(ctx, &csi.ProbeRequest{})
		cancel()
	}
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("calls past the limit = %v, want UNAVAILABLE", err)
	}
	if code := p.exitCode(t, 20*time.Second); code != crashExitCode {
		t.Fatalf("exit code %d, want %d", code, crashExitCode)
	}
}

func TestBinaryProbeFaults(t *testing.T) {
	dir := shortTempDir(t)
	p, sock := startBinary(t, dir, []string{envNotReadyFor + "=1h", envLatency + "=20ms"},
		"--state-dir", filepath.Join(dir, "state"))
	conn := dial(t, sock)
	waitServing(t, p, conn)
	start := time.Now()
	resp, err := csi.NewIdentityClient(conn).Probe(context.Background(), &csi.ProbeRequest{})
	if err != nil {
		t.Fatalf("Probe: %v", err)
	}
	if resp.GetReady() == nil || resp.GetReady().GetValue() {
		t.Fatalf("ready = %v, want an explicit false", resp.GetReady())
	}
	if took := time.Since(start); took < 20*time.Millisecond {
		t.Fatalf("Probe took %s, want >= the injected 20ms", took)
	}

	dir2 := shortTempDir(t)
	p2, sock2 := startBinary(t, dir2, []string{envProbeFail + "=1"}, "--state-dir", filepath.Join(dir2, "state"))
	conn2 := dial(t, sock2)
	waitServing(t, p2, conn2)
	if _, err := csi.NewIdentityClient(conn2).Probe(context.Background(), &csi.ProbeRequest{}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("Probe = %v, want FAILED_PRECONDITION", err)
	}
}

// TestBinarySurvivesKill9 publishes a volume, SIGKILLs the plugin, starts a
// new one on the same state dir and expects the same volume, an idempotent
// re-publish, the workload's file, and a clean unpublish/unstage/delete.
func TestBinarySurvivesKill9(t *testing.T) {
	dir := shortTempDir(t)
	unmountUnder(t, dir)
	state := filepath.Join(dir, "state")
	ctx := context.Background()
	p, sock := startBinary(t, dir, nil, "--state-dir", state, "--node-id", testNode)
	conn := dial(t, sock)
	waitServing(t, p, conn)
	ctl, node := csi.NewControllerClient(conn), csi.NewNodeClient(conn)

	createReq := &csi.CreateVolumeRequest{Name: "durable", VolumeCapabilities: []*csi.VolumeCapability{mountCap}}
	vol, err := ctl.CreateVolume(ctx, createReq)
	if err != nil {
		t.Fatalf("CreateVolume: %v", err)
	}
	id := vol.GetVolume().GetVolumeId()
	staging, target := filepath.Join(dir, "staging"), filepath.Join(dir, "target")
	if err := os.Mkdir(staging, 0o750); err != nil {
		t.Fatal(err)
	}
	stageReq := &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: staging, VolumeCapability: mountCap}
	pubReq := &csi.NodePublishVolumeRequest{VolumeId: id, StagingTargetPath: staging, TargetPath: target, VolumeCapability: mountCap}
	if _, err := node.NodeStageVolume(ctx, stageReq); err != nil {
		t.Fatalf("NodeStageVolume: %v", err)
	}
	if _, err := node.NodePublishVolume(ctx, pubReq); err != nil {
		t.Fatalf("NodePublishVolume: %v", err)
	}
	if err := os.WriteFile(filepath.Join(target, "note"), []byte("hello"), 0o644); err != nil {
		t.Fatalf("workload write: %v", err)
	}

	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill -9: %v", err)
	}
	p.exitCode(t, 20*time.Second)

	p2, sock2 := startBinary(t, dir, nil, "--state-dir", state, "--node-id", testNode)
	conn2 := dial(t, sock2)
	waitServing(t, p2, conn2)
	ctl, node = csi.NewControllerClient(conn2), csi.NewNodeClient(conn2)
	again, err := ctl.CreateVolume(ctx, createReq)
	if err != nil || again.GetVolume().GetVolumeId() != id {
		t.Fatalf("CreateVolume after kill -9 = %v, %v; want %s", again, err, id)
	}
	if _, err := node.NodeStageVolume(ctx, stageReq); err != nil {
		t.Fatalf("NodeStageVolume after kill -9: %v", err)
	}
	if _, err := node.NodePublishVolume(ctx, pubReq); err != nil {
		t.Fatalf("NodePublishVolume after kill -9: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(target, "note")); err != nil || string(b) != "hello" {
		t.Fatalf("workload file after restart = %q, %v", b, err)
	}
	if _, err := node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target}); err != nil {
		t.Fatalf("NodeUnpublishVolume: %v", err)
	}
	if _, err := node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging}); err != nil {
		t.Fatalf("NodeUnstageVolume: %v", err)
	}
	if _, err := ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id}); err != nil {
		t.Fatalf("DeleteVolume: %v", err)
	}
	for _, path := range []string{target, filepath.Join(state, "volumes", id)} {
		if _, err := os.Lstat(path); !os.IsNotExist(err) {
			t.Errorf("%s still exists: %v", path, err)
		}
	}
	if ok, _ := isMountpoint(staging); ok {
		t.Errorf("staging still mounted")
	}
}

// TestBinaryFailDelayAndCallRecord is the agent's crash test in small: the
// first CreateVolume fails as asked, the retry creates the volume but its
// answer is held back until the caller gives up, and calls.json tells
// what the plugin saw.
func TestBinaryFailDelayAndCallRecord(t *testing.T) {
	dir := shortTempDir(t)
	state := filepath.Join(dir, "state")
	p, sock := startBinary(t, dir, []string{envFail + "=CreateVolume:1:UNAVAILABLE", envDelay + "=CreateVolume:1h", envRecordCalls + "=1"},
		"--state-dir", state)
	conn := dial(t, sock)
	waitServing(t, p, conn)
	ctl := csi.NewControllerClient(conn)
	req := &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: []*csi.VolumeCapability{mountCap},
		CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20}}
	if _, err := ctl.CreateVolume(context.Background(), req); status.Code(err) != codes.Unavailable {
		t.Fatalf("1st CreateVolume = %v, want the injected UNAVAILABLE", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := ctl.CreateVolume(ctx, req); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("2nd CreateVolume = %v, want DEADLINE_EXCEEDED (held back by the delay)", err)
	}
	list, err := ctl.ListVolumes(context.Background(), &csi.ListVolumesRequest{})
	if err != nil || len(list.GetEntries()) != 1 {
		t.Fatalf("ListVolumes = %v, %v; want the volume the unanswered call created", list.GetEntries(), err)
	}
	got := readCalls(t, state)
	if got.Calls["CreateVolume"] != 2 || got.Overlaps != 0 || got.MaxParallel != 1 {
		t.Fatalf("calls.json = %+v, want 2 CreateVolume calls one at a time", got)
	}
}

func TestBinaryBadFailRuleNamesTheVariable(t *testing.T) {
	dir := shortTempDir(t)
	p, _ := startBinary(t, dir, []string{envFail + "=CreateVolume:1:NOPE"}, "--state-dir", filepath.Join(dir, "state"))
	if code := p.exitCode(t, 20*time.Second); code != 2 {
		t.Fatalf("exit code %d, want 2", code)
	}
	if out := p.out.String(); !strings.Contains(out, envFail) {
		t.Fatalf("output does not name %s:\n%s", envFail, out)
	}
}
