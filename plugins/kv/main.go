package main

import (
	"flag"
	"fmt"
	"os"

	"google.golang.org/grpc"

	"github.com/pluginhost/pluginhost/plugins/kv/kvpb"
	"github.com/pluginhost/pluginhost/sdk"
)

// PluginType is the plugin type this binary provides.
const PluginType = "kv"

func main() {
	fs := flag.NewFlagSet("kv", flag.ExitOnError)
	endpoint := sdk.EndpointFlag(fs)
	_ = fs.Parse(os.Args[1:])

	instance := os.Getenv("NOMAD_ALLOC_ID")
	if instance == "" {
		instance = fmt.Sprintf("pid-%d", os.Getpid())
	}
	store := newStore(instance)
	sdk.Main(sdk.Config{
		Name:     "kv",
		Types:    []string{PluginType},
		Endpoint: *endpoint,
		Register: func(s *grpc.Server) { kvpb.RegisterKVServer(s, store) },
	})
}
