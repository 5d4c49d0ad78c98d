package sdk

import (
	"context"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// stopper makes a graceful stop possible under go-plugin. grpc's GracefulStop
// waits for every open stream to end, and a go-plugin host holds two that
// never do (stdio and broker); so would a client watching grpc health. Left
// alone they would make every SIGTERM cost the full StopTimeout. The stopper
// wraps those infrastructure streams so that starting a stop ends them, and
// GracefulStop then waits only for the plugin's own calls, which it lets
// finish and flush properly before closing connections.
type stopper struct {
	ctx    context.Context // done once a stop has begun
	cancel context.CancelFunc
}

func newStopper() *stopper {
	ctx, cancel := context.WithCancel(context.Background())
	return &stopper{ctx: ctx, cancel: cancel}
}

// Infrastructure streams are long-lived by design and must not hold a stop.
var infrastructurePrefixes = []string{"/plugin.", "/grpc.health.v1.Health/", "/grpc.reflection."}

func isInfrastructure(method string) bool {
	for _, p := range infrastructurePrefixes {
		if strings.HasPrefix(method, p) {
			return true
		}
	}
	return false
}

func (s *stopper) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if !isInfrastructure(info.FullMethod) {
		return h(srv, ss)
	}
	ctx, cancel := context.WithCancel(ss.Context())
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)()
	return h(srv, &endableStream{ServerStream: ss, ctx: ctx})
}

// serverOptions installs the stopper on a server.
func (s *stopper) serverOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ChainStreamInterceptor(s.stream)}
}

// stop ends the infrastructure streams, lets in-flight calls finish for up
// to timeout, then cuts what is left. It reports whether everything finished.
func (s *stopper) stop(srv *grpc.Server, timeout time.Duration) bool {
	s.cancel()
	done := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(done)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		srv.Stop()
		<-done
		return false
	}
}

var errStopping = status.Error(codes.Unavailable, "plugin is stopping")

// endableStream is a server stream whose Context and RecvMsg also end when
// its ctx does, so that handlers blocked in either return.
type endableStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (e *endableStream) Context() context.Context { return e.ctx }

func (e *endableStream) RecvMsg(m any) error {
	errCh := make(chan error, 1)
	// This goroutine ends with the stream: once the handler has returned,
	// grpc finishes the stream and the underlying RecvMsg returns.
	go func() { errCh <- e.ServerStream.RecvMsg(m) }()
	select {
	case err := <-errCh:
		return err
	case <-e.ctx.Done():
		return errStopping
	}
}
