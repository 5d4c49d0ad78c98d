package main

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/pluginhost/pluginhost/internal/testbin"
	"github.com/pluginhost/pluginhost/internal/testproc"
	"github.com/pluginhost/pluginhost/plugins/kv/kvpb"
	"github.com/pluginhost/pluginhost/sdk"
	"github.com/pluginhost/pluginhost/sdk/sdktest"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// exercise puts, gets and refuses a bad key through conn.
func exercise(t *testing.T, conn grpc.ClientConnInterface, wantInstance string) {
	t.Helper()
	ctx := ctxT(t)
	kv := kvpb.NewKVClient(conn)
	if _, err := kv.Put(ctx, &kvpb.PutRequest{Key: "k", Value: []byte("v")}); err != nil {
		t.Fatalf("Put: %v", err)
	}
	got, err := kv.Get(ctx, &kvpb.GetRequest{Key: "k"})
	if err != nil || !got.GetFound() || string(got.GetValue()) != "v" {
		t.Fatalf("Get = %v, %v", got, err)
	}
	if wantInstance != "" && got.GetInstance() != wantInstance {
		t.Fatalf("instance %q, want %q", got.GetInstance(), wantInstance)
	}
	if miss, err := kv.Get(ctx, &kvpb.GetRequest{Key: "nope"}); err != nil || miss.GetFound() {
		t.Fatalf("Get of a missing key = %v, %v", miss, err)
	}
	if _, err := kv.Put(ctx, &kvpb.PutRequest{Key: ""}); err == nil {
		t.Fatal("Put accepted an empty key")
	}
	hc, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "plugin"})
	if err != nil || hc.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health = %v, %v", hc, err)
	}
}

// In-process and standalone: the sdk serves a plugin without CSI Identity.
func TestStandaloneInProcess(t *testing.T) {
	p := sdktest.StartInProcess(t, sdk.Config{
		Name: "kv", Types: []string{PluginType},
		Register: func(s *grpc.Server) { kvpb.RegisterKVServer(s, newStore("here")) },
	})
	exercise(t, p.Conn, "here")
	// Not CSI, so not on a socket named as if it were.
	if filepath.Base(p.SocketPath) != "plugin.sock" {
		t.Errorf("in-process socket %s, want plugin.sock", p.SocketPath)
	}
}

// The real binary under go-plugin, as pluginhost launches it: the sdk's
// handshake, the plugin's socket in the host's directory, the allocation
// ID as its instance, and a clean exit on SIGTERM.
func TestUnderGoPlugin(t *testing.T) {
	bin := testbin.MustPath(t, "kv")
	p := sdktest.Start(t, bin, sdktest.WithEnv("NOMAD_ALLOC_ID=alloc-1"),
		sdktest.WithVersions(sdk.HostConnPlugins(PluginType, sdk.ProtocolVersion)))
	exercise(t, p.Conn, "alloc-1")
	rpc, err := p.Client.Client()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := rpc.Dispense(PluginType)
	if err != nil {
		t.Fatalf("dispense %q: %v", PluginType, err)
	}
	conn, ok := raw.(*grpc.ClientConn)
	if !ok {
		t.Fatalf("dispensed %T, want *grpc.ClientConn", raw)
	}
	exercise(t, conn, "alloc-1")

	if err := syscall.Kill(p.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testproc.WaitGone(t, p.Pid, 10*time.Second)
}
