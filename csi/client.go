package csi

import (
	"context"
	"fmt"
	"net"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// DefaultCallTimeout bounds a whole call, retries included, when the caller's
// context has no deadline of its own.
const DefaultCallTimeout = 2 * time.Minute

// ClientConfig configures a Client.
type ClientConfig struct {
	// Endpoint is the plugin's socket: a path, or "unix:///path" as in
	// CSI_ENDPOINT.
	Endpoint string
	// Logger is named "csi-client" under the given logger; nil discards.
	Logger hclog.Logger
	// CallTimeout bounds a call whose context has no deadline. Zero means
	// DefaultCallTimeout.
	CallTimeout time.Duration
	// Retry is the retry policy; the zero value means the defaults.
	Retry RetryPolicy
	// DialOptions are appended to the client's own (for example transport
	// credentials, should plugins ever be served over TLS).
	DialOptions []grpc.DialOption
	// Conn, if set, is an open connection to Endpoint that the client uses
	// instead of dialing its own: the go-plugin connection of an sdk
	// plugin, so that the supervisor adds no second connection to every
	// plugin. The client borrows it: Close leaves it open.
	Conn grpc.ClientConnInterface
	// Observer, if set, is told the duration and outcome of every call
	// (the agent's metrics). Nil observes nothing: the client works the
	// same without an agent.
	Observer RPCObserver
	// Dial, if set, connects to the socket instead of a plain dial: the
	// agent's, which runs as root and must not be led to another
	// process's socket by a plugin that replaced its own with a link.
	Dial func(ctx context.Context, socket string) (net.Conn, error)
}

// Client is a CSI client for one plugin socket. It is safe for concurrent
// use. Its methods take and return the CSI spec's own message types: the
// wrapper adds timeouts, retries and error context, nothing else.
type Client struct {
	socket      string
	logger      hclog.Logger
	callTimeout time.Duration
	retry       RetryPolicy
	observer    RPCObserver

	// conn is nil when the connection is borrowed (ClientConfig.Conn).
	conn       *grpc.ClientConn
	identity   csipb.IdentityClient
	controller csipb.ControllerClient
	node       csipb.NodeClient
}

// NewClient returns a client for the socket in cfg.Endpoint. It does not
// connect: the connection is made on the first call and remade whenever the
// plugin restarts, so a client outlives its plugin's restarts.
func NewClient(cfg ClientConfig) (*Client, error) {
	socket, err := SocketPath(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	c := &Client{
		socket:      socket,
		logger:      logger.Named("csi-client").With("socket", socket),
		callTimeout: cfg.CallTimeout,
		retry:       cfg.Retry.withDefaults(),
		observer:    cfg.Observer,
	}
	if c.callTimeout <= 0 {
		c.callTimeout = DefaultCallTimeout
	}
	if cfg.Conn != nil {
		c.setStubs(cfg.Conn)
		return c, nil
	}

	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// Dial the path ourselves instead of through a "unix:" target URL,
		// so that paths with '%', '?' or '#' in them work.
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			if cfg.Dial != nil {
				return cfg.Dial(ctx, socket)
			}
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}),
		// gRPC's default reconnect backoff grows to two minutes. A local
		// plugin that restarted is back within a second or two, and every
		// call made while the channel waits fails with UNAVAILABLE, so keep
		// the reconnect wait short.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{
				BaseDelay:  50 * time.Millisecond,
				Multiplier: 1.6,
				Jitter:     0.2,
				MaxDelay:   time.Second,
			},
			MinConnectTimeout: 2 * time.Second,
		}),
	}
	opts = append(opts, cfg.DialOptions...)
	conn, err := grpc.NewClient("passthrough:///localhost", opts...)
	if err != nil {
		return nil, fmt.Errorf("csi client for %s: %w", socket, err)
	}
	c.conn = conn
	c.setStubs(conn)
	return c, nil
}

func (c *Client) setStubs(conn grpc.ClientConnInterface) {
	c.identity = csipb.NewIdentityClient(conn)
	c.controller = csipb.NewControllerClient(conn)
	c.node = csipb.NewNodeClient(conn)
}

// Socket returns the path of the socket the client dials.
func (c *Client) Socket() string { return c.socket }

// Close releases the connection, unless it was borrowed. Calls in flight
// on an owned connection fail with CANCELED.
func (c *Client) Close() error {
	if c.conn == nil {
		return nil
	}
	if err := c.conn.Close(); err != nil {
		return fmt.Errorf("csi client for %s: close: %w", c.socket, err)
	}
	return nil
}

// invoke runs one RPC under the client's timeouts and retry policy.
//
// The caller's deadline bounds the whole call; without one, CallTimeout
// does. Each attempt additionally gets AttemptTimeout, so that one hung
// attempt turns into a retryable DEADLINE_EXCEEDED rather than eating the
// whole budget. Between attempts it waits Backoff(n), and gives up early
// when the remaining budget cannot cover the wait.
func invoke[Resp any](ctx context.Context, c *Client, method string, rpc func(context.Context) (Resp, error)) (Resp, error) {
	if c.observer == nil {
		return invokeRetrying(ctx, c, method, rpc)
	}
	start := time.Now()
	resp, err := invokeRetrying(ctx, c, method, rpc)
	c.observer.ObserveRPC(method, status.Code(err), time.Since(start))
	return resp, err
}

func invokeRetrying[Resp any](ctx context.Context, c *Client, method string, rpc func(context.Context) (Resp, error)) (Resp, error) {
	var zero Resp
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.callTimeout)
		defer cancel()
	}
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, c.retry.AttemptTimeout)
		resp, err := rpc(actx)
		cancel()
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			// Keep the caller's reason reachable with errors.Is: gRPC
			// turns it into a status that does not wrap it.
			return zero, callError(method, c.socket, attempt+1, JoinErrors(err, ctx.Err()))
		}
		if attempt+1 >= c.retry.MaxAttempts || !Retryable(err) {
			return zero, callError(method, c.socket, attempt+1, err)
		}
		wait := c.retry.Backoff(attempt)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return zero, callError(method, c.socket, attempt+1, err)
		}
		c.logger.Debug("retrying CSI call", "method", method, "attempt", attempt+1, "wait", wait, "error", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return zero, callError(method, c.socket, attempt+1, JoinErrors(err, ctx.Err()))
		case <-t.C:
		}
	}
}

// callError wraps err with the method, socket and attempt count; the gRPC
// status stays reachable through status.FromError and errors.As.
func callError(method, socket string, attempts int, err error) error {
	if attempts > 1 {
		return fmt.Errorf("csi %s on %s (after %d attempts): %w", method, socket, attempts, err)
	}
	return fmt.Errorf("csi %s on %s: %w", method, socket, err)
}
