package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"

	plugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"
)

// PluginReattach is GET /v1/plugin/TYPE/NAME/reattach: go-plugin's
// ReattachConfig of a plugin's active instance, in a form that survives
// JSON (go-plugin's own holds a net.Addr interface). Use ReattachConfig to
// turn it into go-plugin's.
type PluginReattach struct {
	Type    string
	Name    string
	AllocID string
	// Protocol is go-plugin's: "grpc" or "netrpc".
	Protocol string
	// ProtocolVersion is the version the plugin and the agent negotiated
	// at launch: the consumer must dispense from its plugin set for it.
	ProtocolVersion int
	// Network and Addr are the plugin's socket ("unix", a path).
	Network string
	Addr    string
	// Pid is the plugin's process.
	Pid int
	// Standby is the record of the instance that becomes active if this
	// one leaves (the registration before it), nil while there is none.
	// A ReattachFollower keeps a client of it connected, so that losing
	// the active instance costs a switch, not a connect. It plays no part
	// in ReattachConfig.
	Standby *PluginReattach `json:",omitempty"`
}

// SameInstance reports whether r and o are the same launch of the same
// allocation (their Standby aside).
func (r *PluginReattach) SameInstance(o *PluginReattach) bool {
	if r == nil || o == nil {
		return r == o
	}
	return r.AllocID == o.AllocID && r.Pid == o.Pid && r.Network == o.Network && r.Addr == o.Addr &&
		r.Protocol == o.Protocol && r.ProtocolVersion == o.ProtocolVersion
}

// PluginReattach asks for the reattach record of a plugin's active
// instance (GET /v1/plugin/TYPE/NAME/reattach).
func (c *Client) PluginReattach(ctx context.Context, pluginType, name string) (*PluginReattach, error) {
	var out PluginReattach
	path := "/v1/plugin/" + url.PathEscape(pluginType) + "/" + url.PathEscape(name) + "/reattach"
	if err := c.do(ctx, http.MethodGet, path, nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ReattachConfig returns go-plugin's ReattachConfig for the active instance
// of a hosted plugin. An existing go-plugin host program uses the hosted
// plugin instead of launching its own by setting it as ClientConfig.Reattach
// in place of Cmd (ReattachClientConfig does that and picks the plugin set of
// the negotiated version); Client and Dispense then work as before, for
// net/rpc and gRPC plugins alike.
//
// The hosted plugin is shared: the config is marked go-plugin's test mode
// (ReattachConfig.Test), in which Client.Kill does not ask the plugin to
// shut down (GRPCController.Shutdown, Control.Quit) and does not kill it,
// so that no consumer's Kill or exit stops it for the others. Kill then
// releases nothing either: the connection lives until the program exits or
// the instance does. A program that reattaches again and again should use
// a ReattachFollower, which makes a client per instance that becomes
// active (and one for its standby), not one per call.
//
// Calling ClientProtocol.Close yourself still sends the shutdown request,
// and go-plugin's gRPC server stops at once: don't.
//
// While the plugin's instance is restarting (the agent answers 503: an
// allocation declares it, none is active) it waits, for as long as ctx
// allows, for the next one to become active.
func ReattachConfig(ctx context.Context, c *Client, pluginType, name string) (*plugin.ReattachConfig, error) {
	r, err := c.activeReattach(ctx, pluginType, name)
	if err != nil {
		return nil, err
	}
	return r.ReattachConfig(), nil
}

// activeReattach is PluginReattach that waits out a restarting instance:
// on ErrUnavailable it follows the Plugin topic and asks again whenever
// the plugin's active instance changes. A plugin nobody declares is not
// waited for (ErrNotFound).
func (c *Client) activeReattach(ctx context.Context, pluginType, name string) (*PluginReattach, error) {
	r, err := c.PluginReattach(ctx, pluginType, name)
	if !errors.Is(err, ErrUnavailable) {
		return r, err
	}
	stream, serr := c.Events(ctx, TopicPlugin)
	if serr != nil {
		return nil, err
	}
	defer stream.Close()
	key := pluginType + "/" + name
	for {
		// Asked again once subscribed: the instance may have become
		// active in between.
		r, err = c.PluginReattach(ctx, pluginType, name)
		if !errors.Is(err, ErrUnavailable) {
			return r, err
		}
		for {
			ev, nerr := stream.Next(ctx)
			if nerr != nil {
				return nil, fmt.Errorf("%w; waiting for the next instance: %w", err, nerr)
			}
			if ev.Type == EventPluginActive && ev.Key == key {
				break
			}
		}
	}
}

// HostedClientConfig is ReattachConfig and ReattachClientConfig in one step,
// plus what keeps go-plugin's GRPCBroker usable: the client opens its
// broker stream only when the program first uses the broker, and holds a
// lease with the agent while it is open, so that the agent restarts the
// instance when that stream ends (go-plugin's plugin side serves one broker
// stream in its life; see broker_lease.go). Use it, or a ReattachFollower,
// in host programs whose plugins call back through the broker.
func HostedClientConfig(ctx context.Context, c *Client, pluginType, name string, base *plugin.ClientConfig) (*plugin.ClientConfig, error) {
	r, err := c.activeReattach(ctx, pluginType, name)
	if err != nil {
		return nil, err
	}
	return r.ClientConfig(c, base)
}

// ClientConfig is base reattached to this record's instance, with the
// broker lease of HostedClientConfig; c is the agent's client.
func (r *PluginReattach) ClientConfig(c *Client, base *plugin.ClientConfig) (*plugin.ClientConfig, error) {
	cfg, err := ReattachClientConfig(base, r.ReattachConfig())
	if err != nil {
		return nil, err
	}
	opts := make([]grpc.DialOption, 0, len(base.GRPCDialOptions)+1)
	opts = append(opts, base.GRPCDialOptions...)
	cfg.GRPCDialOptions = append(opts, leasedBrokerStreams(&brokerLease{c: c, rec: *r}))
	return cfg, nil
}

// ReattachConfig is go-plugin's ReattachConfig for this record: test mode
// (see the ReattachConfig function), and a runner of our own that learns of
// the plugin's exit (see attachProcess) instead of go-plugin's
// once-a-second kill(pid, 0) poll, which takes a plugin of another user for
// an exited one.
func (r *PluginReattach) ReattachConfig() *plugin.ReattachConfig {
	var addr net.Addr = &net.UnixAddr{Net: "unix", Name: r.Addr}
	if r.Network == "tcp" {
		// go-plugin's Python example serves TCP on loopback.
		if a, err := net.ResolveTCPAddr("tcp", r.Addr); err == nil {
			addr = a
		}
	}
	pid := r.Pid
	return &plugin.ReattachConfig{
		Protocol:        plugin.Protocol(r.Protocol),
		ProtocolVersion: r.ProtocolVersion,
		Addr:            addr,
		Pid:             pid,
		Test:            true,
		ReattachFunc: func() (runner.AttachedRunner, error) {
			return attachProcess(pid)
		},
	}
}

// ReattachClientConfig returns a copy of base (a go-plugin host program's
// own ClientConfig) that reattaches with rc instead of launching: Cmd and
// RunnerFunc cleared, Reattach set, and Plugins set to the plugin set of the
// version the hosted instance speaks (go-plugin does not negotiate on
// reattach; it dispenses from Plugins).
func ReattachClientConfig(base *plugin.ClientConfig, rc *plugin.ReattachConfig) (*plugin.ClientConfig, error) {
	cfg := *base
	cfg.Cmd, cfg.RunnerFunc, cfg.Reattach = nil, nil, rc
	switch set, ok := base.VersionedPlugins[rc.ProtocolVersion]; {
	case ok:
		cfg.Plugins = set
	case base.Plugins != nil && (base.ProtocolVersion == 0 || int(base.ProtocolVersion) == rc.ProtocolVersion):
	default:
		return nil, fmt.Errorf("reattach: the hosted plugin speaks protocol version %d, and the client config has no plugin set for it", rc.ProtocolVersion)
	}
	return &cfg, nil
}
