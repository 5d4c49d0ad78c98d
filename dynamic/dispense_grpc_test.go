package dynamic

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// startHealthServer serves the gRPC health service on a real unix socket and
// returns its path; the server and socket go away with the test.
func startHealthServer(t *testing.T, dir string) string {
	t.Helper()
	sock := filepath.Join(dir, "csi.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatalf("listen %s: %v", sock, err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		if err := <-served; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			t.Errorf("serve: %v", err)
		}
	})
	return sock
}

// TestDispenseRealGRPC: the dispenser the agent would install (a gRPC client
// on the active allocation's unix socket) reaches the right process, and
// after the active allocation goes away it reaches the successor.
func TestDispenseRealGRPC(t *testing.T) {
	r := newRegistryConfig(t, Config{Dispensers: map[string]DispenseFunc{PluginTypeCSINode: func(info *PluginInfo) (any, error) {
		conn, err := grpc.NewClient("unix://"+info.ConnectionInfo.SocketPath,
			grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { conn.Close() })
		return healthpb.NewHealthClient(conn), nil
	}}})

	old := node("p", "old")
	old.ConnectionInfo.SocketPath = startHealthServer(t, t.TempDir())
	mustRegister(t, r, old)
	cur := node("p", "cur")
	curDir := t.TempDir()
	cur.ConnectionInfo.SocketPath = startHealthServer(t, curDir)
	mustRegister(t, r, cur)

	check := func(wantOK bool) {
		t.Helper()
		c, err := r.Dispense(PluginTypeCSINode, "p")
		if err != nil {
			t.Fatalf("dispense: %v", err)
		}
		_, err = c.(healthpb.HealthClient).Check(t.Context(), &healthpb.HealthCheckRequest{})
		if (err == nil) != wantOK {
			t.Fatalf("health check: %v, want ok=%v", err, wantOK)
		}
	}
	check(true)
	// Prove the client went to cur's socket: with cur's socket gone the
	// call fails although old still serves.
	if err := os.Remove(filepath.Join(curDir, "csi.sock")); err != nil {
		t.Fatal(err)
	}
	check(false)
	mustDeregister(t, r, PluginTypeCSINode, "p", "cur")
	check(true)
}
