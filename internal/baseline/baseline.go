// Package baseline is what the launch benchmarks compare pluginhost with:
// go-plugin alone launching an sdk plugin and calling it once, with none
// of the agent's work (task dirs, log shipper, state store, registry).
package baseline

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/pluginhost/pluginhost/sdk"
)

// GoPluginFirstProbe launches the sdk CSI plugin bin through go-plugin with
// NOMAD_TASK_DIR=taskDir, dispenses it and returns once it has answered one
// Probe. kill stops the plugin; on error the plugin is already stopped.
// Give every call a fresh taskDir, as every allocation gets one: a plugin
// whose state dirs exist starts warm.
func GoPluginFirstProbe(bin, taskDir string) (kill func(), err error) {
	cmd := exec.Command(bin)
	cmd.Env = []string{"NOMAD_TASK_DIR=" + taskDir}
	c := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig: sdk.Handshake(), VersionedPlugins: sdk.HostPlugins(),
		Cmd: cmd, AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger: hclog.NewNullLogger(),
	})
	rpc, err := c.Client()
	if err != nil {
		c.Kill()
		return nil, fmt.Errorf("bare go-plugin launch: %w", err)
	}
	raw, err := rpc.Dispense(sdk.PluginCSI)
	if err != nil {
		c.Kill()
		return nil, fmt.Errorf("bare dispense: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := csipb.NewIdentityClient(raw.(*grpc.ClientConn)).Probe(ctx, &csipb.ProbeRequest{}); err != nil {
		c.Kill()
		return nil, fmt.Errorf("bare Probe: %w", err)
	}
	return c.Kill, nil
}
