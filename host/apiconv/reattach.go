package apiconv

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/supervisor"
)

// PluginReattach is go-plugin's reattach record of p, the active instance
// of pluginType/name, from the options its supervision registered with it
// (the task's handle at launch or re-adoption).
func PluginReattach(pluginType, name string, p *dynamic.PluginInfo) (*api.PluginReattach, error) {
	proto := p.Options[supervisor.OptionGoPluginProtocol]
	if proto == "" || p.ConnectionInfo == nil {
		return nil, fmt.Errorf("active instance %s is not a go-plugin plugin of a type other than CSI's (no reattach record): %w", p.AllocID, api.ErrNotFound)
	}
	version, err := strconv.Atoi(p.Options[supervisor.OptionGoPluginProtocolVersion])
	if err != nil {
		return nil, fmt.Errorf("registration of %s: protocol version %q: %w", p.AllocID, p.Options[supervisor.OptionGoPluginProtocolVersion], err)
	}
	pid, err := strconv.Atoi(p.Options[supervisor.OptionGoPluginPid])
	if err != nil {
		return nil, fmt.Errorf("registration of %s: pid %q: %w", p.AllocID, p.Options[supervisor.OptionGoPluginPid], err)
	}
	network, addr := "unix", p.ConnectionInfo.SocketPath
	if a, ok := strings.CutPrefix(addr, dynamic.TCPPrefix); ok {
		network, addr = "tcp", a
	}
	return &api.PluginReattach{
		Type: pluginType, Name: name, AllocID: p.AllocID,
		Protocol: proto, ProtocolVersion: version,
		Network: network, Addr: addr, Pid: pid,
	}, nil
}

// PluginReattachWithStandby is PluginReattach of active, naming standby's
// record as its Standby when standby is a go-plugin launch too (a standby
// of another kind is left out: a consumer only connects ahead to what it
// could reattach to).
func PluginReattachWithStandby(pluginType, name string, active, standby *dynamic.PluginInfo) (*api.PluginReattach, error) {
	rec, err := PluginReattach(pluginType, name, active)
	if err != nil {
		return nil, err
	}
	if standby != nil {
		if sb, err := PluginReattach(pluginType, name, standby); err == nil {
			rec.Standby = sb
		}
	}
	return rec, nil
}
