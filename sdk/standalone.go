package sdk

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
)

// serveStandalone runs the plugin as an ordinary CSI driver on its endpoint
// until ctx is done, then stops gracefully within cfg.StopTimeout.
func serveStandalone(ctx context.Context, cfg Config) error {
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = os.Getenv(EnvCSIEndpoint)
	}
	path, err := ParseEndpoint(endpoint)
	if err != nil {
		return err
	}
	lis, err := listenUnix(ctx, path)
	if err != nil {
		return err
	}
	// net.UnixListener unlinks its socket on Close; this covers the paths
	// where Serve never took ownership of the listener.
	defer func() {
		_ = lis.Close()
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			cfg.Logger.Warn("removing socket", "path", path, "error", err)
		}
	}()

	d := newStopper()
	srv := grpc.NewServer(append(d.serverOptions(), cfg.ServerOptions...)...)
	registerCommon(srv)
	cfg.registerServices(srv)
	cfg.Logger.Info("serving standalone", "endpoint", path)
	return runGRPC(ctx, cfg, srv, d, lis)
}

// registerCommon adds what go-plugin registers on its socket, so that both
// modes serve the same set and an author's Register behaves the same in each.
func registerCommon(srv *grpc.Server) {
	hs := health.NewServer()
	hs.SetServingStatus("plugin", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	reflection.Register(srv)
}

// runGRPC serves until srv stops or ctx is done; then it stops srv
// gracefully (see stopper), and hard once cfg.StopTimeout has passed.
func runGRPC(ctx context.Context, cfg Config, srv *grpc.Server, d *stopper, lis net.Listener) error {
	errCh := make(chan error, 1)
	go func() { errCh <- srv.Serve(lis) }()
	select {
	case err := <-errCh:
		if err != nil {
			return fmt.Errorf("sdk: serving %s: %w", lis.Addr(), err)
		}
		return nil
	case <-ctx.Done():
	}
	stop(cfg, srv, d, context.Cause(ctx))
	<-errCh
	return nil
}

// stop logs and performs a graceful stop.
func stop(cfg Config, srv *grpc.Server, d *stopper, reason error) {
	cfg.Logger.Info("stopping", "reason", reason, "timeout", cfg.StopTimeout)
	if !d.stop(srv, cfg.StopTimeout) {
		cfg.Logger.Warn("in-flight calls cut after the stop timeout", "timeout", cfg.StopTimeout)
	}
}

// listenUnix listens on path, first removing a stale socket left by a plugin
// that was killed. A socket that still answers belongs to a live process and
// is left alone; anything that is not a socket is never removed.
func listenUnix(ctx context.Context, path string) (net.Listener, error) {
	fi, err := os.Lstat(path)
	switch {
	case err == nil && fi.Mode()&fs.ModeSocket == 0:
		return nil, fmt.Errorf("sdk: endpoint %s exists and is not a socket", path)
	case err == nil:
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		var d net.Dialer
		c, derr := d.DialContext(dctx, "unix", path)
		cancel()
		if derr == nil {
			_ = c.Close()
			return nil, fmt.Errorf("sdk: endpoint %s is in use by another process", path)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("sdk: removing stale socket %s: %w", path, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("sdk: endpoint %s: %w", path, err)
	}
	var lc net.ListenConfig
	lis, err := lc.Listen(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("sdk: listening on %s: %w", path, err)
	}
	// The socket is bound with the umask's mode; only its owner (and
	// root: kubelet, the Nomad client, the pluginhost agent) has any
	// business connecting.
	if err := chmodSocket(path, 0o600); err != nil {
		_ = lis.Close()
		return nil, fmt.Errorf("sdk: chmod %s: %w", path, err)
	}
	return lis, nil
}
