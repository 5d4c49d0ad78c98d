package sdk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// Environment that go-plugin's host side may set and that would take the CSI
// services off plain gRPC: AutoMTLS wraps the socket in TLS, broker
// multiplexing wraps it in yamux. pluginhost dials the socket with a plain
// gRPC client, so the plugin refuses both (the host then fails with a clear
// go-plugin error instead of an unreachable plugin).
const (
	envClientCert       = "PLUGIN_CLIENT_CERT"
	envMultiplexGRPC    = "PLUGIN_MULTIPLEX_GRPC"
	envProtocolVersions = "PLUGIN_PROTOCOL_VERSIONS"
)

// CSIPlugin is the go-plugin Plugin named PluginCSI. On the plugin side it
// registers the Config's services on go-plugin's gRPC server; on the host side
// dispensing it yields the *grpc.ClientConn to the plugin's socket.
type CSIPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	// register puts the plugin's services on go-plugin's server (one
	// registration the plugin set shares among its entries); nil on the
	// host side.
	register func(*grpc.Server)
}

var _ plugin.GRPCPlugin = (*CSIPlugin)(nil)

// GRPCServer implements plugin.GRPCPlugin.
func (p *CSIPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.register == nil {
		return errors.New("sdk: CSIPlugin has no Config: the host-side plugin cannot serve")
	}
	p.register(s)
	return nil
}

// GRPCClient implements plugin.GRPCPlugin: the dispensed value is the
// connection itself, so callers build whichever CSI clients they need.
func (p *CSIPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return c, nil
}

// ConnPlugin is a go-plugin Plugin for a plugin type the host does not
// interpret: on the host side dispensing it yields the *grpc.ClientConn to
// the plugin's socket, whatever services the plugin serves there. On the
// plugin side the sdk uses it for each of Config.Types. It speaks gRPC only.
type ConnPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	register func(*grpc.Server) // nil on the host side
}

var _ plugin.GRPCPlugin = (*ConnPlugin)(nil)

// GRPCServer implements plugin.GRPCPlugin.
func (p *ConnPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.register == nil {
		return errors.New("sdk: ConnPlugin has no services: the host-side plugin cannot serve")
	}
	p.register(s)
	return nil
}

// GRPCClient implements plugin.GRPCPlugin: the dispensed value is the
// connection itself.
func (p *ConnPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return c, nil
}

// HostConnPlugins returns host-side plugin sets that dispense name as a
// *grpc.ClientConn in each of versions: what a host needs to launch or
// re-attach a gRPC go-plugin plugin whose services it does not interpret.
// Over gRPC the name never reaches the plugin (go-plugin dispenses on the
// host side only), so any name works; the version must be one the plugin
// speaks.
func HostConnPlugins(name string, versions ...int) map[int]plugin.PluginSet {
	out := make(map[int]plugin.PluginSet, len(versions))
	for _, v := range versions {
		out[v] = plugin.PluginSet{name: &ConnPlugin{}}
	}
	return out
}

// HostPlugins returns the host side's versioned plugin sets, for
// plugin.ClientConfig.VersionedPlugins. go-plugin offers every version to the
// plugin and the plugin picks the newest it speaks, so a newer host keeps
// working with older plugins.
func HostPlugins() map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{
		1: {PluginCSI: &CSIPlugin{}},
	}
}

// HostPluginSet returns the host's plugin set for one protocol version. A
// reattaching host must pass it as ClientConfig.Plugins: go-plugin skips
// version negotiation on reattach and dispenses from Plugins only
// (go-plugin #310), so the host saves the negotiated version next to its
// reattach record and looks the set up again here.
func HostPluginSet(version int) (plugin.PluginSet, error) {
	set, ok := HostPlugins()[version]
	if !ok {
		return nil, fmt.Errorf("sdk: unknown plugin protocol version %d", version)
	}
	return set, nil
}

// pluginVersions is the plugin side's versioned plugin sets: "csi" when
// the Config serves CSI, and one entry per Config.Types. go-plugin calls
// GRPCServer of every entry on the same server, so only the first call
// registers the services.
func pluginVersions(cfg *Config) map[int]plugin.PluginSet {
	var once sync.Once
	register := func(s *grpc.Server) { once.Do(func() { cfg.registerServices(s) }) }
	set := plugin.PluginSet{}
	if cfg.CSI != nil {
		set[PluginCSI] = &CSIPlugin{register: register}
	}
	for _, t := range cfg.Types {
		set[t] = &ConnPlugin{register: register}
	}
	return map[int]plugin.PluginSet{ProtocolVersion: set}
}

// servePlugin serves cfg through go-plugin until the host shuts the plugin
// down or ctx is done.
//
// go-plugin's Serve is used in its test mode on purpose. Its normal mode
// prints the handshake line and then swaps os.Stdout and os.Stderr for pipes
// that are drained only while a host streams stdio, so a plugin whose host
// died blocks on its 64 KiB-th byte of output; and it stops only through the
// host's Shutdown RPC. Test mode builds the same server (health, broker,
// controller, stdio and our services on a socket in PLUGIN_UNIX_SOCKET_DIR,
// version negotiated from PLUGIN_PROTOCOL_VERSIONS) but hands the address
// back to us: this function writes the handshake line itself, swaps stdio for
// non-blocking writers, and stops gracefully when ctx is done.
func servePlugin(ctx context.Context, cfg Config) error {
	// Plain gRPC on the socket is part of the contract; see the constants.
	_ = os.Unsetenv(envClientCert)
	_ = os.Unsetenv(envMultiplexGRPC)

	var (
		mu  sync.Mutex
		srv *grpc.Server
	)
	d := newStopper()
	reattachCh := make(chan *plugin.ReattachConfig, 1)
	closeCh := make(chan struct{})
	serveCtx, cancelServe := context.WithCancel(context.Background())
	defer cancelServe()

	go plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  Handshake(),
		VersionedPlugins: pluginVersions(&cfg),
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			// go-plugin's options first (TLS, were it allowed), then the
			// stopper's, then the author's, as in standalone mode.
			opts = append(opts, d.serverOptions()...)
			s := grpc.NewServer(append(opts, cfg.ServerOptions...)...)
			mu.Lock()
			srv = s
			mu.Unlock()
			return s
		},
		Logger: cfg.Logger.Named("go-plugin"),
		Test: &plugin.ServeTestConfig{
			Context:          serveCtx,
			ReattachConfigCh: reattachCh,
			CloseCh:          closeCh,
		},
	})

	var rc *plugin.ReattachConfig
	select {
	case rc = <-reattachCh:
	case <-closeCh:
		// go-plugin logged the cause (listener or plugin registration).
		return errors.New("sdk: go-plugin could not start serving; see the plugin log")
	case <-ctx.Done():
		cancelServe()
		<-closeCh
		return nil
	}
	if !versionOffered(rc.ProtocolVersion) {
		cfg.Logger.Warn("host offers no protocol version this plugin speaks; the host will refuse the handshake",
			"offered", os.Getenv(envProtocolVersions), "plugin", rc.ProtocolVersion)
	}
	line := fmt.Sprintf("%d|%d|%s|%s|%s|\n", plugin.CoreProtocolVersion, rc.ProtocolVersion,
		rc.Addr.Network(), rc.Addr.String(), rc.Protocol)
	if _, err := os.Stdout.WriteString(line); err != nil {
		cancelServe()
		<-closeCh
		return fmt.Errorf("sdk: writing go-plugin handshake: %w", err)
	}
	_ = os.Stdout.Sync()

	swap, err := swapStdio()
	if err != nil {
		cfg.Logger.Warn("stdout/stderr stay blocking", "error", err)
	} else {
		defer swap.restore()
	}
	cfg.Logger.Info("serving under go-plugin", "socket", rc.Addr.String(), "protocol_version", rc.ProtocolVersion)

	select {
	case <-closeCh:
		// The host called go-plugin's Shutdown, or the server failed.
		cfg.Logger.Info("stopped by host")
		return nil
	case <-ctx.Done():
	}
	mu.Lock()
	s := srv
	mu.Unlock()
	stop(cfg, s, d, context.Cause(ctx))
	cancelServe()
	<-closeCh
	return nil
}

// versionOffered reports whether the host listed v in PLUGIN_PROTOCOL_VERSIONS
// (go-plugin falls back to our lowest version when it did not).
func versionOffered(v int) bool {
	for s := range strings.SplitSeq(os.Getenv(envProtocolVersions), ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n == v {
			return true
		}
	}
	return false
}
