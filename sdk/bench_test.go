package sdk_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	hclog "github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/pluginhost/pluginhost/sdk"
	"github.com/pluginhost/pluginhost/sdk/sdktest"
)

// BenchmarkProbe: one unary CSI call on the plugin's socket, through an sdk
// plugin under go-plugin versus a bare gRPC server serving the same Identity
// server. Both are subprocesses dialled with a plain gRPC client, the way
// pluginhost's CSI code reaches plugins. Goal: sdk ≤ 1.1× bare.
func BenchmarkProbe(b *testing.B) {
	b.Run("sdk-go-plugin", func(b *testing.B) {
		p := sdktest.Start(b, bins.MinPlugin, sdktest.WithLogger(hclog.NewNullLogger()))
		benchProbe(b, p.Identity)
	})
	b.Run("bare-grpc", func(b *testing.B) {
		sock := filepath.Join(shortDir(b), "bare.sock")
		cmd := exec.Command(bins.BarePlugin, "-grpc-endpoint", sock)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
		conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = conn.Close() })
		c := csi.NewIdentityClient(conn)
		if _, err := c.Probe(context.Background(), &csi.ProbeRequest{}, grpc.WaitForReady(true)); err != nil {
			b.Fatal(err)
		}
		benchProbe(b, c)
	})
}

func benchProbe(b *testing.B, c csi.IdentityClient) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Probe(ctx, &csi.ProbeRequest{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLaunchToFirstProbe: fork/exec, go-plugin handshake, dispense and a
// first successful Probe, for an sdk plugin versus a bare go-plugin plugin
// with the same Identity server. Stopping the plugin is not timed. Goal:
// sdk ≤ 1.2× bare.
func BenchmarkLaunchToFirstProbe(b *testing.B) {
	for _, bc := range []struct{ name, bin string }{
		{"sdk", bins.MinPlugin},
		{"bare-go-plugin", bins.BarePlugin},
	} {
		b.Run(bc.name, func(b *testing.B) {
			dir := shortDir(b)
			ctx := context.Background()
			for b.Loop() {
				cmd := exec.Command(bc.bin)
				cmd.Env = append(os.Environ(), plugin.EnvUnixSocketDir+"="+dir)
				c := plugin.NewClient(&plugin.ClientConfig{
					HandshakeConfig:  sdk.Handshake(),
					VersionedPlugins: sdk.HostPlugins(),
					Cmd:              cmd,
					SkipHostEnv:      true,
					AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
					Logger:           hclog.NewNullLogger(),
				})
				rpc, err := c.Client()
				if err != nil {
					c.Kill()
					b.Fatal(err)
				}
				raw, err := rpc.Dispense(sdk.PluginCSI)
				if err != nil {
					c.Kill()
					b.Fatal(err)
				}
				if _, err := csi.NewIdentityClient(raw.(*grpc.ClientConn)).Probe(ctx, &csi.ProbeRequest{}); err != nil {
					c.Kill()
					b.Fatal(err)
				}
				b.StopTimer()
				c.Kill()
				b.StartTimer()
			}
		})
	}
}
