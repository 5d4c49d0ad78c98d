package csitest

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/pluginhost/pluginhost/internal/testbin"
	"github.com/pluginhost/pluginhost/internal/testproc"
)

// StartMockCSI runs the real mockcsi binary as a standalone CSI driver
// (CSI_ENDPOINT, as under Nomad or Kubernetes) and returns its socket once
// it answers. The process is killed at cleanup.
func StartMockCSI(t testing.TB, env ...string) string {
	t.Helper()
	bin := testbin.MustPath(t, "mockcsi")
	dir := ShortDir(t)
	socket := filepath.Join(dir, "csi.sock")

	cmd := exec.Command(bin, "--state-dir", filepath.Join(dir, "state"), "--node-id", "test-node")
	cmd.Env = append(append(cmd.Environ(), "CSI_ENDPOINT=unix://"+socket), env...)
	var out testproc.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("mockcsi output:\n%s", out.String())
		}
	})

	// Wait until the driver answers: WaitForReady rides out the time
	// before it listens (reconnecting every 50ms at most), and its exit
	// ends the wait at once.
	// GetPluginInfo, not Probe, since some tests make Probe fail.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	go func() {
		select {
		case <-exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	conn, err := grpc.NewClient("unix://"+socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 5 * time.Millisecond, Multiplier: 1.6, MaxDelay: 50 * time.Millisecond},
			MinConnectTimeout: time.Second,
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := csipb.NewIdentityClient(conn).GetPluginInfo(ctx, &csipb.GetPluginInfoRequest{}, grpc.WaitForReady(true)); err != nil {
		t.Fatalf("mockcsi never answered: %v", err)
	}
	return socket
}

// TestManagerFingerprintsRealMockCSI registers the real driver as a
// monolith and checks what the manager learns.
