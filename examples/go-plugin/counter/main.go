// Command counter uses go-plugin's bidirectional example plugin
// (examples/go-plugin/bidirectional.hcl) hosted by pluginhost: what the
// example's own host program does, with the plugin reattached through
// pluginhost instead of launched. The plugin calls back into this program
// (AddHelper.Sum) through go-plugin's GRPCBroker.
//
//	counter put KEY N    # adds N to KEY
//	counter get KEY
//
// PLUGINHOST_ADDR names the agent. This program is ours; it imports the
// example's shared package from the go-plugin module. It is a program of its
// own because the example's .proto file has the same name as the grpc
// example's, and the two cannot be linked into one binary.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"time"

	plugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/examples/bidirectional/shared"

	"github.com/pluginhost/pluginhost/api"
)

type addHelper struct{}

func (*addHelper) Sum(a, b int64) (int64, error) { return a + b, nil }

func main() {
	log.SetOutput(io.Discard) // as the example's main.go: no plugin logs
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) < 2 || (args[0] == "put" && len(args) != 3) {
		return fmt.Errorf("usage: counter put KEY N | counter get KEY")
	}
	client, err := api.NewClient(os.Getenv("PLUGINHOST_ADDR"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The one change to the example's host program: the hosted plugin's
	// Reattach in place of Cmd (with the broker lease its callbacks need).
	cfg, err := api.HostedClientConfig(ctx, client, "counter", "counter", &plugin.ClientConfig{
		HandshakeConfig:  shared.Handshake,
		Plugins:          shared.PluginMap,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolNetRPC, plugin.ProtocolGRPC},
	})
	if err != nil {
		return err
	}
	pc := plugin.NewClient(cfg)
	defer pc.Kill() // a no-op for the hosted plugin: see api.ReattachConfig
	rpcClient, err := pc.Client()
	if err != nil {
		return err
	}
	raw, err := rpcClient.Dispense("counter")
	if err != nil {
		return err
	}
	counter := raw.(shared.Counter)
	switch args[0] {
	case "get":
		n, err := counter.Get(args[1])
		if err != nil {
			return err
		}
		fmt.Println(n)
	case "put":
		n, err := strconv.Atoi(args[2])
		if err != nil {
			return err
		}
		return counter.Put(args[1], int64(n), &addHelper{})
	default:
		return fmt.Errorf("please only use 'get' or 'put'")
	}
	return nil
}
