package driver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/pluginhost/pluginhost/sdk"
)

// HealthService is the grpc.health.v1 service name go-plugin's server
// reports: SERVING from the moment it serves.
const HealthService = "plugin"

// ErrNotPlainGRPC is wrapped by launch errors of plugins pluginhost cannot
// talk to: plugins that need TLS (go-plugin's AutoMTLS or a TLSProvider).
// pluginhost, and every consumer after it, dials the plugin's unix socket
// without TLS. (net/rpc plugins are hosted: see PingIdentify.)
var ErrNotPlainGRPC = errors.New("pluginhost hosts go-plugin plugins that serve their unix socket without TLS")

// HealthIdentity is what HealthIdentify learnt: the plugin's answer to
// grpc.health.v1 Check("plugin"). NOT_SERVING is a plugin still starting,
// not an identity failure; the supervisor judges it.
type HealthIdentity struct {
	Status healthpb.HealthCheckResponse_ServingStatus
}

// HealthIdentify asks a dispensed *grpc.ClientConn for go-plugin's health
// service: any go-plugin gRPC plugin serves it, so answering proves that
// the socket speaks plain gRPC and is the plugin's.
func HealthIdentify(ctx context.Context, dispensed any) (any, error) {
	conn, ok := dispensed.(grpc.ClientConnInterface)
	if !ok {
		return nil, fmt.Errorf("identity check: dispensed %T, want a gRPC connection", dispensed)
	}
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: HealthService})
	if err != nil {
		return nil, fmt.Errorf("identity check: grpc.health.v1 Check(%q) over plain gRPC: %w (%w: a plugin that needs TLS or AutoMTLS is not supported)",
			HealthService, err, ErrNotPlainGRPC)
	}
	return &HealthIdentity{Status: resp.GetStatus()}, nil
}

// PingIdentify is the identity check of a net/rpc plugin: go-plugin's
// Control.Ping over the multiplexed connection, which every net/rpc
// go-plugin server answers. dispensed is the plugin.ClientProtocol itself
// (the driver never dispenses a net/rpc plugin: over net/rpc Dispense
// reaches the plugin and needs its real plugin name, which pluginhost does
// not know). The answer is recorded as a SERVING *HealthIdentity, so the
// supervision treats both protocols alike.
func PingIdentify(ctx context.Context, dispensed any) (any, error) {
	rpc, ok := dispensed.(plugin.ClientProtocol)
	if !ok {
		return nil, fmt.Errorf("identity check: dispensed %T, want a go-plugin net/rpc client", dispensed)
	}
	if err := Ping(ctx, rpc); err != nil {
		return nil, fmt.Errorf("identity check: go-plugin Control.Ping: %w", err)
	}
	return &HealthIdentity{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// Ping is rpc.Ping bounded by ctx. net/rpc calls take no context, so the
// call runs in a goroutine; one that outlives ctx (a wedged plugin) ends
// when the connection does, which the task's Kill or Detach closes or the
// plugin's exit breaks.
func Ping(ctx context.Context, rpc plugin.ClientProtocol) error {
	done := make(chan error, 1)
	go func() { done <- rpc.Ping() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// launchConfig is what one launch or re-attach uses: the driver's own (CSI)
// setting, or a task's PluginSpec.
type launchConfig struct {
	handshake plugin.HandshakeConfig
	sets      map[int]plugin.PluginSet
	dispense  string
	identify  func(ctx context.Context, dispensed any) (any, error)
	// foreign is a plugin not built with the sdk (the job names its
	// handshake): it may speak net/rpc, and it is stopped through
	// go-plugin's controller first, since go-plugin's Serve ignores
	// SIGINT, Nomad's default kill_signal.
	foreign bool
}

// protocols are the go-plugin protocols a launch accepts: sdk plugins serve
// gRPC only; a foreign plugin may serve either.
func (lc launchConfig) protocols() []plugin.Protocol {
	if lc.foreign {
		return []plugin.Protocol{plugin.ProtocolGRPC, plugin.ProtocolNetRPC}
	}
	return []plugin.Protocol{plugin.ProtocolGRPC}
}

func (d *GoPlugin) launchConfig(spec *PluginSpec) (launchConfig, error) {
	if spec == nil {
		return launchConfig{handshake: d.cfg.Handshake, sets: d.cfg.PluginSets, dispense: d.cfg.Dispense, identify: d.cfg.Identify}, nil
	}
	if spec.Dispense == "" {
		return launchConfig{}, errors.New("go_plugin: plugin spec has no name to dispense")
	}
	if spec.MagicCookieKey == "" {
		// An sdk plugin of another type: the sdk's handshake, which is
		// the driver's, in every version the driver speaks.
		versions := slices.Sorted(maps.Keys(d.cfg.PluginSets))
		return launchConfig{
			handshake: d.cfg.Handshake,
			sets:      sdk.HostConnPlugins(spec.Dispense, versions...),
			dispense:  spec.Dispense,
			identify:  HealthIdentify,
		}, nil
	}
	if spec.MagicCookieValue == "" || len(spec.ProtocolVersions) == 0 {
		return launchConfig{}, errors.New("go_plugin: plugin spec needs a magic cookie value and protocol versions")
	}
	return launchConfig{
		handshake: plugin.HandshakeConfig{
			// Unused with VersionedPlugins, but go-plugin logs it.
			ProtocolVersion:  uint(spec.ProtocolVersions[0]),
			MagicCookieKey:   spec.MagicCookieKey,
			MagicCookieValue: spec.MagicCookieValue,
		},
		sets:     sdk.HostConnPlugins(spec.Dispense, spec.ProtocolVersions...),
		dispense: spec.Dispense,
		identify: HealthIdentify,
		foreign:  true,
	}, nil
}

// explainLaunch turns go-plugin's launch errors about what pluginhost
// does not speak into ones that say so. line is the plugin's handshake
// line ("" when unknown, as on re-attach): CORE|APP|NETWORK|ADDR|PROTOCOL
// [|CERT[|MUX]]. allowed are the protocols the launch accepted.
func explainLaunch(line string, allowed []plugin.Protocol, err error) error {
	if err == nil {
		return nil
	}
	parts := strings.Split(strings.TrimSpace(line), "|")
	if len(parts) >= 4 {
		proto := string(plugin.ProtocolNetRPC) // go-plugin's default when the field is missing
		if len(parts) >= 5 {
			proto = parts[4]
		}
		if !slices.Contains(allowed, plugin.Protocol(proto)) {
			return fmt.Errorf("plugin speaks go-plugin protocol %q; this task accepts %v (an sdk plugin serves gRPC; a job with a handshake block accepts net/rpc too): %w", proto, allowed, err)
		}
		if len(parts) >= 6 && len(parts[5]) > 50 {
			return fmt.Errorf("plugin sent a TLS certificate in its handshake (AutoMTLS): %w; plugins that need TLS are not supported: %w", ErrNotPlainGRPC, err)
		}
	}
	return err
}
