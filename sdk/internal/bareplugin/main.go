// Command bareplugin is the benchmarks' baseline: the same Identity server
// as testplugin, served with nothing of the sdk. With -grpc-endpoint it is a
// bare gRPC server on a unix socket; otherwise a bare go-plugin plugin that
// speaks pluginhost's handshake.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/pluginhost/pluginhost/sdk"
	"github.com/pluginhost/pluginhost/sdk/internal/testcsi"
)

type csiPlugin struct {
	plugin.NetRPCUnsupportedPlugin
}

func (csiPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	csi.RegisterIdentityServer(s, &testcsi.Identity{})
	return nil
}

func (csiPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return c, nil
}

func main() {
	endpoint := flag.String("grpc-endpoint", "", "serve plain gRPC on this unix socket path")
	flag.Parse()
	if *endpoint == "" {
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig:  sdk.Handshake(),
			VersionedPlugins: map[int]plugin.PluginSet{1: {sdk.PluginCSI: csiPlugin{}}},
			GRPCServer:       plugin.DefaultGRPCServer,
		})
		return
	}
	lis, err := net.Listen("unix", *endpoint)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s := grpc.NewServer()
	csi.RegisterIdentityServer(s, &testcsi.Identity{})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		s.Stop()
	}()
	_ = s.Serve(lis)
}
