package sdk_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/pluginhost/pluginhost/sdk"
	"github.com/pluginhost/pluginhost/sdk/internal/testcsi"
	"github.com/pluginhost/pluginhost/sdk/sdktest"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Under go-plugin, the CSI services, the author's extra service and go-plugin's
// own health service must all answer on the go-plugin socket to a plain gRPC
// client, which is how pluginhost's CSI code reaches plugins.
func TestPluginModeServesOnPlainSocket(t *testing.T) {
	p := sdktest.Start(t, bins.TestPlugin)
	ctx := ctxT(t)

	// Through go-plugin's own dispensed connection.
	rpc, err := p.Client.Client()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := rpc.Dispense(sdk.PluginCSI)
	if err != nil {
		t.Fatalf("dispense: %v", err)
	}
	gpConn, ok := raw.(*grpc.ClientConn)
	if !ok {
		t.Fatalf("dispensed %T, want *grpc.ClientConn", raw)
	}
	info, err := csi.NewIdentityClient(gpConn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil || info.GetName() != testcsi.Name {
		t.Fatalf("GetPluginInfo via go-plugin = %v, %v", info, err)
	}

	// Through a plain connection to the socket.
	probe, err := p.Identity.Probe(ctx, &csi.ProbeRequest{})
	if err != nil || !probe.GetReady().GetValue() {
		t.Fatalf("Probe = %v, %v", probe, err)
	}
	ni, err := p.Node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil || ni.GetNodeId() != strconv.Itoa(p.Pid) {
		t.Fatalf("NodeGetInfo = %v, %v; want node id %d", ni, err, p.Pid)
	}
	if _, err := testpb.NewTestServiceClient(p.Conn).EmptyCall(ctx, &testpb.Empty{}); err != nil {
		t.Fatalf("extra service: %v", err)
	}
	hc, err := healthpb.NewHealthClient(p.Conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "plugin"})
	if err != nil || hc.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health = %v, %v", hc, err)
	}
	if !strings.HasPrefix(p.SocketPath, os.TempDir()) || !strings.Contains(p.SocketPath, "/sdkt-") {
		t.Fatalf("socket %s is not in the directory the host chose", p.SocketPath)
	}
	if p.Client.NegotiatedVersion() != sdk.ProtocolVersion {
		t.Fatalf("negotiated %d, want %d", p.Client.NegotiatedVersion(), sdk.ProtocolVersion)
	}

	// go-plugin's Kill asks the plugin to shut down; it must exit and take
	// its socket with it.
	p.Client.Kill()
	if !p.Client.Exited() {
		t.Fatal("plugin still running after Kill")
	}
	if _, err := os.Stat(p.SocketPath); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("socket %s left behind: %v", p.SocketPath, err)
	}
}

// A newer host offering {1,2} must still drive a plugin that speaks only 1,
// and a reattaching host must dispense from the saved version's set because
// go-plugin skips negotiation on reattach (go-plugin #310).
func TestVersionNegotiationAndReattach(t *testing.T) {
	versions := sdk.HostPlugins()
	versions[2] = plugin.PluginSet{sdk.PluginCSI: &sdk.CSIPlugin{}}
	p := sdktest.Start(t, bins.TestPlugin, sdktest.WithVersions(versions))
	ctx := ctxT(t)

	if got := p.Client.NegotiatedVersion(); got != 1 {
		t.Fatalf("negotiated version %d, want 1", got)
	}
	if _, err := p.Identity.Probe(ctx, &csi.ProbeRequest{}); err != nil {
		t.Fatalf("Probe: %v", err)
	}

	rc := p.Client.ReattachConfig()
	set, err := sdk.HostPluginSet(p.Client.NegotiatedVersion())
	if err != nil {
		t.Fatal(err)
	}
	re := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake(),
		Plugins:          set,
		Reattach:         rc,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
	})
	rpc, err := re.Client()
	if err != nil {
		t.Fatalf("reattach: %v", err)
	}
	raw, err := rpc.Dispense(sdk.PluginCSI)
	if err != nil {
		t.Fatalf("dispense after reattach: %v", err)
	}
	if _, err := csi.NewIdentityClient(raw.(*grpc.ClientConn)).Probe(ctx, &csi.ProbeRequest{}); err != nil {
		t.Fatalf("Probe after reattach: %v", err)
	}

	// The pitfall the helper exists for: versioned sets alone are ignored
	// on reattach, and dispensing fails.
	bad := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake(),
		VersionedPlugins: sdk.HostPlugins(),
		Reattach:         rc,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
	})
	badRPC, err := bad.Client()
	if err != nil {
		t.Fatalf("reattach: %v", err)
	}
	if _, err := badRPC.Dispense(sdk.PluginCSI); err == nil {
		t.Fatal("dispense without the saved version's set succeeded; the reattach helper is no longer needed")
	}

	// A reattached client owns the process as much as the launching one:
	// its Kill (go-plugin's Shutdown RPC) stops the plugin. Closing a
	// go-plugin GRPCClient would do the same, so neither is closed earlier.
	re.Kill()
	bad.Kill()
	p.Client.Kill()
	if !p.Client.Exited() {
		t.Fatal("plugin still running after Kill")
	}

	if _, err := sdk.HostPluginSet(99); err == nil {
		t.Fatal("HostPluginSet(99) succeeded")
	}
}

// A host that offers no version the plugin speaks gets a clear go-plugin
// error, not a hang.
func TestIncompatibleHostVersion(t *testing.T) {
	cmd := exec.Command(bins.TestPlugin)
	cmd.Env = append(os.Environ(), plugin.EnvUnixSocketDir+"="+shortDir(t))
	c := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake(),
		VersionedPlugins: map[int]plugin.PluginSet{7: {sdk.PluginCSI: &sdk.CSIPlugin{}}},
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
	})
	t.Cleanup(c.Kill)
	_, err := c.Client()
	if err == nil || !strings.Contains(err.Error(), "incompatible API version") {
		t.Fatalf("Client() error = %v, want incompatible API version", err)
	}
}

func shortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sdk-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func plainConn(t *testing.T, sock string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}
