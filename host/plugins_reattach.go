package host

import (
	"context"
	"fmt"
	"strconv"

	"github.com/pluginhost/pluginhost/host/api"
	"github.com/pluginhost/pluginhost/host/csiplugin"
)

// PluginReattach implements api.ReattachBackend: go-plugin's reattach record
// of a plugin's active instance, from the options its supervision
// registered with it (the task's handle at launch or re-adoption). The
// registry is the truth about which instance is active, so the answer and
// the PluginActiveInstance events agree.
func (a *Agent) PluginReattach(_ context.Context, pluginType, name string) (*api.PluginReattach, error) {
	p, ok := a.registry.Active(pluginType, name)
	if !ok {
		return nil, fmt.Errorf("no active instance: %w", api.ErrNotFound)
	}
	proto := p.Options[csiplugin.OptionGoPluginProtocol]
	if proto == "" || p.ConnectionInfo == nil {
		return nil, fmt.Errorf("active instance %s is not a go-plugin plugin of a type other than CSI's (no reattach record): %w", p.AllocID, api.ErrNotFound)
	}
	version, err := strconv.Atoi(p.Options[csiplugin.OptionGoPluginProtocolVersion])
	if err != nil {
		return nil, fmt.Errorf("registration of %s: protocol version %q: %w", p.AllocID, p.Options[csiplugin.OptionGoPluginProtocolVersion], err)
	}
	pid, err := strconv.Atoi(p.Options[csiplugin.OptionGoPluginPid])
	if err != nil {
		return nil, fmt.Errorf("registration of %s: pid %q: %w", p.AllocID, p.Options[csiplugin.OptionGoPluginPid], err)
	}
	return &api.PluginReattach{
		Type: pluginType, Name: name, AllocID: p.AllocID,
		Protocol: proto, ProtocolVersion: version,
		Network: "unix", Addr: p.ConnectionInfo.SocketPath, Pid: pid,
	}, nil
}
