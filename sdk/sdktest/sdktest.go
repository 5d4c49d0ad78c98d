package sdktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	hclog "github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/pluginhost/pluginhost/sdk"
)

// StartTimeout bounds how long Start and StartInProcess wait for a plugin.
const StartTimeout = 30 * time.Second

// Plugin is a running plugin and clients for it.
type Plugin struct {
	Identity   csi.IdentityClient
	Controller csi.ControllerClient
	Node       csi.NodeClient

	// Conn is a plain gRPC connection to SocketPath, the same kind of
	// connection pluginhost's CSI code makes. Use it for extra services.
	Conn       *grpc.ClientConn
	SocketPath string

	// Client is the go-plugin client (nil in-process). Its Kill stops the
	// plugin early; cleanup copes with that.
	Client *plugin.Client
	// Pid is the plugin's process ID (the test's own in-process).
	Pid int
}

// Option adjusts Start.
type Option func(*options)

type options struct {
	args     []string
	env      []string
	versions map[int]plugin.PluginSet
	logger   hclog.Logger
}

// WithArgs passes command-line arguments to the plugin binary.
func WithArgs(args ...string) Option {
	return func(o *options) { o.args = append(o.args, args...) }
}

// WithEnv adds KEY=value entries to the plugin's environment.
func WithEnv(kv ...string) Option {
	return func(o *options) { o.env = append(o.env, kv...) }
}

// WithVersions replaces the host's plugin sets (default sdk.HostPlugins()),
// to test version negotiation.
func WithVersions(v map[int]plugin.PluginSet) Option {
	return func(o *options) { o.versions = v }
}

// WithLogger sets the host-side logger that also shows the plugin's log lines
// (default: hclog at debug level to stderr).
func WithLogger(l hclog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// Start launches binary through go-plugin as pluginhost does and waits until
// its socket serves gRPC. The plugin is killed and its socket directory
// removed at cleanup.
func Start(t testing.TB, binary string, opts ...Option) *Plugin {
	t.Helper()
	o := options{versions: sdk.HostPlugins()}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = hclog.New(&hclog.LoggerOptions{Name: "sdktest", Level: hclog.Debug, Output: os.Stderr})
	}
	dir := socketDir(t)
	cmd := exec.Command(binary, o.args...)
	// go-plugin honours UnixSocketConfig.TempDir only with a RunnerFunc; with
	// Cmd the host must set the socket dir itself. SkipHostEnv because
	// go-plugin would otherwise append the test's environment last, where it
	// overrides WithEnv.
	cmd.Env = append(os.Environ(), o.env...)
	cmd.Env = append(cmd.Env, plugin.EnvUnixSocketDir+"="+dir)
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake(),
		VersionedPlugins: o.versions,
		Cmd:              cmd,
		SkipHostEnv:      true,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		StartTimeout:     StartTimeout,
		Logger:           o.logger,
	})
	t.Cleanup(client.Kill)
	if _, err := client.Client(); err != nil {
		t.Fatalf("sdktest: starting %s: %v", binary, err)
	}
	rc := client.ReattachConfig()
	if rc == nil || rc.Addr == nil {
		t.Fatalf("sdktest: %s: go-plugin reports no address", binary)
	}
	p := connect(t, rc.Addr.String())
	p.Client = client
	p.Pid = rc.Pid
	return p
}

// StartInProcess serves cfg in the test process in standalone mode on a
// fresh socket (cfg.Endpoint is overwritten): csi.sock for a CSI plugin,
// plugin.sock for a plugin of another type. It waits until the socket serves
// gRPC; serving stops, gracefully, at cleanup.
func StartInProcess(t testing.TB, cfg sdk.Config) *Plugin {
	t.Helper()
	name := "plugin.sock"
	if cfg.CSI != nil {
		name = "csi.sock"
	}
	sock := filepath.Join(socketDir(t), name)
	cfg.Endpoint = "unix://" + sock
	ctx, cancel := context.WithCancel(context.Background())
	errCh := make(chan error, 1)
	go func() { errCh <- sdk.ServeStandalone(ctx, cfg) }()
	startFailed := false // reported once, by Fatalf below
	t.Cleanup(func() {
		cancel()
		if err := <-errCh; err != nil && !startFailed {
			t.Errorf("sdktest: in-process plugin: %v", err)
		}
	})
	// Fail fast when Serve refuses the config instead of waiting for a socket
	// that will never appear.
	select {
	case err := <-errCh:
		errCh <- err
		startFailed = true
		t.Fatalf("sdktest: in-process plugin stopped at start: %v", err)
	default:
	}
	p := connectWatching(t, sock, errCh)
	p.Pid = os.Getpid()
	return p
}

func connect(t testing.TB, sock string) *Plugin {
	t.Helper()
	return connectWatching(t, sock, nil)
}

// connectWatching dials sock and waits for the connection to become ready,
// giving up early if serveErr (when non-nil) reports that serving ended.
func connectWatching(t testing.TB, sock string, serveErr chan error) *Plugin {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("sdktest: dialing %s: %v", sock, err)
	}
	t.Cleanup(func() { _ = conn.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	if serveErr != nil {
		go func() {
			select {
			case err := <-serveErr:
				serveErr <- err
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	if err := waitReady(ctx, conn); err != nil {
		t.Fatalf("sdktest: plugin socket %s never became ready: %v", sock, err)
	}
	return &Plugin{
		Identity:   csi.NewIdentityClient(conn),
		Controller: csi.NewControllerClient(conn),
		Node:       csi.NewNodeClient(conn),
		Conn:       conn,
		SocketPath: sock,
	}
}

// waitReady follows conn's connectivity events until it is Ready.
func waitReady(ctx context.Context, conn *grpc.ClientConn) error {
	conn.Connect()
	for {
		s := conn.GetState()
		switch s {
		case connectivity.Ready:
			return nil
		case connectivity.Shutdown:
			return errors.New("connection closed")
		case connectivity.TransientFailure:
			// The socket may not exist yet; ask for a new attempt rather
			// than sit out gRPC's reconnect backoff.
			conn.ResetConnectBackoff()
		}
		if !conn.WaitForStateChange(ctx, s) {
			return fmt.Errorf("last state %s: %w", s, ctx.Err())
		}
	}
}

// socketDir makes a short directory for sockets and removes it at cleanup.
func socketDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sdkt-")
	if err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
