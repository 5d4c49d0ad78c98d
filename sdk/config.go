package sdk

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
)

// DefaultStopTimeout bounds a graceful stop: in-flight RPCs get this long to
// finish after SIGTERM before the server is stopped hard.
const DefaultStopTimeout = 10 * time.Second

// Config describes a plugin: its CSI services and anything else it serves.
// A CSI plugin sets CSI (sdkcsi.Services); a plugin of any other type leaves
// it nil, names its types in Types and adds its services in Register. A
// binary may be both.
type Config struct {
	Name string // plugin name, for logs

	// CSI are a CSI plugin's services: sdkcsi.Services{Identity,
	// Controller, Node}. An interface, implemented in sdk/sdkcsi, so that
	// this package does not import the CSI spec and a plugin of another
	// type does not link it.
	CSI CSIServices

	// Types are the plugin types, other than CSI, that this binary
	// provides (for example "kv"). Each becomes a plugin of that name in
	// go-plugin's plugin set, so that a host may dispense it by that name.
	// Health is go-plugin's in both modes: grpc.health.v1 service "plugin"
	// is SERVING while the plugin serves. Required when Identity is nil. The job's go_plugin config says under
	// which type and name pluginhost registers the plugin.
	Types []string

	// Register adds the plugin's gRPC services: a non-CSI plugin's own,
	// or extras next to CSI. The server already carries
	// grpc.health.v1.Health and gRPC reflection in both modes (go-plugin
	// needs them), so Register must not add those.
	Register func(*grpc.Server)

	// Endpoint is the standalone socket; default: the --endpoint flag value
	// or $CSI_ENDPOINT. Under pluginhost it is ignored: the host chooses the
	// socket's directory.
	Endpoint string

	Logger hclog.Logger // default: NewLogger(Name)

	// StopTimeout bounds a graceful stop; default DefaultStopTimeout.
	StopTimeout time.Duration

	// ServerOptions are applied to the plugin's gRPC server in both modes:
	// standalone, and under go-plugin, where they are appended to the
	// options go-plugin passes its ServeConfig.GRPCServer func. They exist
	// for interceptors (logging, metrics, fault injection), so that a
	// concern common to every RPC lives in one place instead of at the top
	// of every handler.
	//
	// Interceptors see every call on the server, not only the CSI ones:
	// grpc.health.v1.Health and reflection in both modes, go-plugin's
	// /plugin.* services under pluginhost. Filter on info.FullMethod (CSI
	// methods start with "/csi.v1."). Prefer grpc.ChainUnaryInterceptor and
	// grpc.ChainStreamInterceptor: they compose with the sdk's own stream
	// interceptor, which runs first. Options that change the transport
	// (grpc.Creds) break the launch contract, which is plain gRPC on the
	// socket.
	ServerOptions []grpc.ServerOption
}

// CSIServices are a CSI plugin's services, as sdkcsi.Services holds them.
type CSIServices interface {
	// CheckCSI refuses services a CSI plugin cannot serve (no Identity).
	CheckCSI() error
	// RegisterCSI puts the services on the plugin's gRPC server.
	RegisterCSI(*grpc.Server)
}

// withDefaults validates c and returns a copy with every default applied, so
// the serving code never re-derives one.
func (c Config) withDefaults() (Config, error) {
	if err := c.checkServices(); err != nil {
		return c, err
	}
	if c.Name == "" {
		c.Name = filepath.Base(os.Args[0])
	}
	if c.Logger == nil {
		c.Logger = NewLogger(c.Name)
	}
	if c.StopTimeout <= 0 {
		c.StopTimeout = DefaultStopTimeout
	}
	return c, nil
}

// checkServices refuses a Config that serves nothing a host could use, or
// whose Types could not be told apart.
func (c Config) checkServices() error {
	if c.CSI == nil && len(c.Types) == 0 {
		return errors.New("sdk: Config needs CSI (a CSI plugin: sdkcsi.Services) or Types (the plugin types it provides)")
	}
	if c.CSI != nil {
		if err := c.CSI.CheckCSI(); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for i, t := range c.Types {
		switch {
		case t == "":
			return fmt.Errorf("sdk: Config.Types[%d] is empty", i)
		case t == PluginCSI:
			return fmt.Errorf("sdk: Config.Types[%d] is %q: a CSI plugin sets Config.CSI instead", i, t)
		case seen[t]:
			return fmt.Errorf("sdk: Config.Types[%d]: %q is listed twice", i, t)
		}
		seen[t] = true
	}
	return nil
}

// registerServices puts everything c serves on s. Both modes call it, so a
// plugin answers the same services on pluginhost's socket and on its
// standalone CSI endpoint.
func (c Config) registerServices(s *grpc.Server) {
	if c.CSI != nil {
		c.CSI.RegisterCSI(s)
	}
	if c.Register != nil {
		c.Register(s)
	}
}
