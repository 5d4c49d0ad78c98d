package sdk

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	hclog "github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
)

// DefaultStopTimeout bounds a graceful stop: in-flight RPCs get this long to
// finish after SIGTERM before the server is stopped hard.
const DefaultStopTimeout = 10 * time.Second

// Config describes a plugin: its CSI services and anything else it serves.
type Config struct {
	Name       string               // plugin name, for logs
	Identity   csi.IdentityServer   // required
	Controller csi.ControllerServer // optional
	Node       csi.NodeServer       // optional

	// Register adds extra gRPC services (plugin types other than CSI). The
	// server already carries grpc.health.v1.Health and gRPC reflection in
	// both modes (go-plugin needs them), so Register must not add those.
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

// withDefaults validates c and returns a copy with every default applied, so
// the serving code never re-derives one.
func (c Config) withDefaults() (Config, error) {
	if c.Identity == nil {
		return c, errors.New("sdk: Config.Identity is required")
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

// registerServices puts everything c serves on s. Both modes call it, so a
// plugin answers the same services on pluginhost's socket and on its
// standalone CSI endpoint.
func (c Config) registerServices(s *grpc.Server) {
	csi.RegisterIdentityServer(s, c.Identity)
	if c.Controller != nil {
		csi.RegisterControllerServer(s, c.Controller)
	}
	if c.Node != nil {
		csi.RegisterNodeServer(s, c.Node)
	}
	if c.Register != nil {
		c.Register(s)
	}
}
