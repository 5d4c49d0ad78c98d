package api

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/resolver"
)

// ResolverScheme is the scheme of gRPC targets that name a plugin:
// pluginhost:///TYPE/NAME.
const ResolverScheme = "pluginhost"

// Resolver retry bounds: how soon, and at most how long after, the
// resolver tries again when the agent cannot be reached.
const (
	resolverRetryMin = 50 * time.Millisecond
	resolverRetryMax = 5 * time.Second
)

// NewResolverBuilder returns a gRPC resolver for pluginhost:///TYPE/NAME
// targets that asks the agent behind c for the plugin's active instance and
// then follows the agent's event stream: when a rolling update or a restart
// makes another allocation active, the ClientConn moves to its socket by
// itself. Calls go straight to the plugin's unix socket; the agent is only
// asked where that is. Install it per connection, with no global state:
//
//	conn, err := grpc.NewClient("pluginhost:///kv/kv-main",
//		grpc.WithResolvers(api.NewResolverBuilder(client)),
//		grpc.WithTransportCredentials(insecure.NewCredentials()))
//
// While the plugin has no active instance (between a crash and the
// restart) the connection reports an error naming the plugin: calls with
// grpc.WaitForReady(true) wait for the next instance, others fail at once.
func NewResolverBuilder(c *Client) resolver.Builder {
	return &resolverBuilder{client: c}
}

type resolverBuilder struct {
	client *Client
}

func (b *resolverBuilder) Scheme() string { return ResolverScheme }

// registryNamePattern is what a plugin type or name in a target may be: the
// same pattern the server holds the paths of /v1/plugin/TYPE/NAME to
// (host/api's registryNamePattern).
var registryNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ParsePluginTarget splits a pluginhost:///TYPE/NAME target's path into its
// type and name.
func ParsePluginTarget(endpoint string) (pluginType, name string, err error) {
	p := strings.TrimPrefix(endpoint, "/")
	pluginType, name, ok := strings.Cut(p, "/")
	if !ok || !registryNamePattern.MatchString(pluginType) || !registryNamePattern.MatchString(name) {
		return "", "", fmt.Errorf("pluginhost resolver: target %q: want %s:///TYPE/NAME (letters, digits, '.', '_', '-')", endpoint, ResolverScheme)
	}
	return pluginType, name, nil
}

func (b *resolverBuilder) Build(target resolver.Target, cc resolver.ClientConn, _ resolver.BuildOptions) (resolver.Resolver, error) {
	typ, name, err := ParsePluginTarget(target.Endpoint())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &pluginResolver{client: b.client, cc: cc, typ: typ, name: name, cancel: cancel, done: make(chan struct{})}
	go r.run(ctx)
	return r, nil
}

// pluginResolver follows one plugin. Its goroutine is stopped by Close.
type pluginResolver struct {
	client    *Client
	cc        resolver.ClientConn
	typ, name string
	cancel    context.CancelFunc
	done      chan struct{}

	mu   sync.Mutex
	last string // socket last handed to cc; "" for none
}

func (r *pluginResolver) key() string { return r.typ + "/" + r.name }

// ResolveNow is a no-op: the resolver learns of every change from the
// event stream as it happens.
func (r *pluginResolver) ResolveNow(resolver.ResolveNowOptions) {}

func (r *pluginResolver) Close() {
	r.cancel()
	<-r.done
}

// run follows the agent's answer and events for the plugin (see
// followActive) until ctx ends, telling gRPC why a subscription ended.
func (r *pluginResolver) run(ctx context.Context) {
	defer close(r.done)
	followActive(ctx, r.client, r.key(), r.sync,
		func(_ context.Context, inst *PluginInstance) error { r.update(inst); return nil },
		func(err error) { r.cc.ReportError(fmt.Errorf("pluginhost resolver %s: %w", r.key(), err)) })
}

// sync asks the agent for the active instance.
func (r *pluginResolver) sync(ctx context.Context) error {
	p, err := r.client.RegisteredPlugin(ctx, r.typ, r.name)
	if errors.Is(err, ErrNotFound) {
		r.update(nil)
		return nil
	}
	if err != nil {
		return fmt.Errorf("asking the agent for %s: %w", r.key(), err)
	}
	r.update(p.Active)
	return nil
}

// update hands the active instance's socket to gRPC when it changed.
func (r *pluginResolver) update(inst *PluginInstance) {
	sock := ""
	if inst != nil {
		sock = inst.SocketPath
	}
	r.mu.Lock()
	changed := sock != r.last || sock == ""
	r.last = sock
	r.mu.Unlock()
	if !changed {
		return
	}
	if sock == "" {
		r.cc.ReportError(fmt.Errorf("pluginhost resolver: plugin %s has no active instance", r.key()))
		return
	}
	// ServerName: the default authority would be the target's "TYPE/NAME",
	// which is no host name.
	_ = r.cc.UpdateState(resolver.State{Addresses: []resolver.Address{{Addr: dialAddr(sock), ServerName: "localhost"}}})
}

// dialAddr is the gRPC address of a registered instance: its unix socket,
// or host:port for one registered at tcp://HOST:PORT (the agent accepts
// loopback addresses only), which gRPC's dialer takes as TCP.
func dialAddr(socketPath string) string {
	if a, ok := strings.CutPrefix(socketPath, tcpPrefix); ok {
		return a
	}
	return "unix://" + socketPath
}
