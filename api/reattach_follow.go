package api

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	plugin "github.com/hashicorp/go-plugin"
)

// ReattachFollower gives a go-plugin host program a client of a hosted
// plugin's active instance and follows that instance across rolling updates
// and restarts, as the pluginhost:/// resolver does for plain gRPC: it asks
// the agent (GET /v1/plugin/TYPE/NAME/reattach), then follows the agent's
// event stream (PluginActiveInstance). Calls go straight to the plugin; the
// agent is only asked where it is.
//
//	f := api.FollowReattach(client, "kv", "kv_grpc", &plugin.ClientConfig{
//		HandshakeConfig: shared.Handshake,
//		Plugins:         shared.PluginMap, // or VersionedPlugins
//	})
//	defer f.Close()
//	raw, err := f.Dispense(ctx, "kv_grpc")
//	kv := raw.(shared.KV)
//
// Dispense and Client return the same value until the active instance
// changes; a caller that gets an error from a call asks again and gets the
// new instance's. Clients are reattached in go-plugin's test mode (see
// ReattachConfig), so nothing a consumer does with them stops the plugin,
// and with HostedClientConfig's broker lease.
//
// The follower also keeps a client of the standby connected: the instance
// the agent makes active if the active one leaves (PluginReattach.Standby).
// Losing the active instance, the one case in which calls have nowhere to
// go until the switch, then costs a switch and not a connect. A new
// instance that becomes active (a rolling update) is connected before the
// switch, while the previous one still serves, and the previous one stays
// on as the standby.
//
// A client of an instance that was active is left alone when it is no
// longer needed, not closed under calls still in flight: its connection
// ends with its instance. An instance that leaves and registers again is
// connected again. A standby that never became active is closed when it is
// replaced and at Close, if it speaks gRPC; go-plugin's net/rpc client has
// no way to close without asking the plugin to quit, so its connection,
// too, ends with its instance, as does one whose connect was given up on
// (see connectTimeout).
type ReattachFollower struct {
	c         *Client
	typ, name string
	base      *plugin.ClientConfig

	cancel context.CancelFunc
	done   chan struct{}

	mu sync.Mutex
	// cur is the active instance, nil while there is none or before the
	// first answer; changed is closed (and replaced) whenever cur changes.
	cur     *followedInstance
	changed chan struct{}
	// standby is the instance next in line, connecting or connected; only
	// the follower's goroutine reads or replaces it.
	standby *followedInstance
	// lastErr is why there is no instance, for callers that give up.
	lastErr error
}

// followedInstance is one instance and what was made for it. client,
// proto and dispensed change under the follower's mu.
type followedInstance struct {
	rec *PluginReattach // Standby cleared
	// connecting delivers the connect started for the instance; the
	// follower's goroutine takes it (then sets it nil) before using the
	// instance, or release's goroutine when the instance is dropped.
	connecting <-chan connected
	client     *plugin.Client
	proto      plugin.ClientProtocol
	dispensed  map[string]any
	// used: the instance has been active, so the program may hold its
	// clients.
	used bool
}

// connected is what a connect made: as far as it got.
type connected struct {
	client    *plugin.Client
	proto     plugin.ClientProtocol
	dispensed map[string]any
}

// FollowReattach starts following pluginType/name. base is the program's
// own ClientConfig (handshake and plugin sets); see ReattachClientConfig.
// Its goroutine runs until Close.
func FollowReattach(c *Client, pluginType, name string, base *plugin.ClientConfig) *ReattachFollower {
	ctx, cancel := context.WithCancel(context.Background())
	f := &ReattachFollower{c: c, typ: pluginType, name: name, base: base, cancel: cancel,
		done: make(chan struct{}), changed: make(chan struct{})}
	go f.run(ctx)
	return f
}

// Close stops following. Clients handed out stay usable.
func (f *ReattachFollower) Close() {
	f.cancel()
	<-f.done
}

func (f *ReattachFollower) key() string { return f.typ + "/" + f.name }

// Current is the active instance's record (nil while there is none; its
// Standby is not set) and a channel closed at the next change.
func (f *ReattachFollower) Current() (*PluginReattach, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cur == nil {
		return nil, f.changed
	}
	r := *f.cur.rec
	return &r, f.changed
}

// Client is a go-plugin client of the active instance, reattached. It
// waits for an active instance until ctx ends.
func (f *ReattachFollower) Client(ctx context.Context) (*plugin.Client, error) {
	inst, err := f.instance(ctx)
	if err != nil {
		return nil, err
	}
	return f.clientOf(inst)
}

// clientOf is inst's go-plugin client.
func (f *ReattachFollower) clientOf(inst *followedInstance) (*plugin.Client, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if inst.client == nil {
		// The follower's connect failed or was given up on: try here, so
		// that the program sees why.
		cfg, err := inst.rec.ClientConfig(f.c, f.base)
		if err != nil {
			return nil, err
		}
		inst.client = plugin.NewClient(cfg)
	}
	return inst.client, nil
}

// Dispense is Client(ctx).Client().Dispense(name), made once per instance.
func (f *ReattachFollower) Dispense(ctx context.Context, name string) (any, error) {
	inst, err := f.instance(ctx)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	raw, ok := inst.dispensed[name]
	f.mu.Unlock()
	if ok {
		return raw, nil
	}
	// The same instance throughout: were the active one asked for again,
	// a switch in between would file another instance's value under this
	// one, which may become active again.
	pc, err := f.clientOf(inst)
	if err != nil {
		return nil, err
	}
	rpc, err := pc.Client()
	if err != nil {
		return nil, fmt.Errorf("reattach to %s at %s: %w", f.key(), inst.rec.Addr, err)
	}
	raw, err = rpc.Dispense(name)
	if err != nil {
		return nil, fmt.Errorf("dispense %q from %s: %w", name, f.key(), err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if inst.proto == nil {
		inst.proto = rpc
	}
	if prev, ok := inst.dispensed[name]; ok {
		return prev, nil // a concurrent caller was first
	}
	inst.dispensed[name] = raw
	return raw, nil
}

// instance waits for an active instance.
func (f *ReattachFollower) instance(ctx context.Context) (*followedInstance, error) {
	for {
		f.mu.Lock()
		inst, changed, lastErr := f.cur, f.changed, f.lastErr
		f.mu.Unlock()
		if inst != nil {
			return inst, nil
		}
		select {
		case <-changed:
		case <-f.done:
			return nil, errors.New("reattach follower closed")
		case <-ctx.Done():
			if lastErr != nil {
				return nil, fmt.Errorf("plugin %s has no active instance: %w (%w)", f.key(), ctx.Err(), lastErr)
			}
			return nil, fmt.Errorf("plugin %s has no active instance: %w", f.key(), ctx.Err())
		}
	}
}

// set makes rec (nil: none) the active instance and rec.Standby the
// standby. It runs in the follower's goroutine only.
//
// The next active instance is made ready before it is published: its
// client connected and every name the program dispensed from the previous
// instance dispensed again. Until then the program keeps using the
// previous instance, which during a rolling update still serves. The
// standby, connected ahead, is ready already or nearly so, and when it is
// what becomes active the switch waits for nothing but what the program
// dispensed since it was connected (a promotion waits at most twice
// connectTimeout: the connect, then those names). What fails here is left
// for the program's own Client or Dispense to retry and report.
func (f *ReattachFollower) set(ctx context.Context, rec *PluginReattach, why error) {
	var standbyRec *PluginReattach
	if rec != nil {
		r := *rec
		standbyRec, r.Standby = r.Standby, nil
		rec = &r
	}
	f.mu.Lock()
	f.lastErr = why
	prev, sb := f.cur, f.standby
	var names []string
	if prev != nil {
		for n := range prev.dispensed {
			names = append(names, n)
		}
	}
	f.mu.Unlock()

	next := prev
	switch {
	case prev != nil && rec.SameInstance(prev.rec):
	case rec == nil:
		next = nil
	case sb != nil && rec.SameInstance(sb.rec):
		next = sb
	default:
		next = &followedInstance{rec: rec, dispensed: map[string]any{}, connecting: f.connect(rec, nil, names)}
	}
	if next != prev && next != nil && !f.ready(ctx, next, names) {
		// Closing. A standby that was to be promoted is released with
		// the follower; a new instance, here.
		if next != sb {
			next.release()
		}
		return
	}

	var nextSB *followedInstance
	switch {
	case next == nil || standbyRec == nil || standbyRec.SameInstance(next.rec):
	case prev != nil && prev != next && standbyRec.SameInstance(prev.rec):
		nextSB = prev // the instance that was active stays on as the standby
	case sb != nil && sb != next && standbyRec.SameInstance(sb.rec) && !f.failed(sb):
		nextSB = sb
	default:
		nextSB = &followedInstance{rec: standbyRec, dispensed: map[string]any{}, connecting: f.connect(standbyRec, nil, names)}
	}

	f.mu.Lock()
	f.standby = nextSB
	if next != prev {
		next.markUsed()
		f.cur = next
		close(f.changed)
		f.changed = make(chan struct{})
	}
	f.mu.Unlock()
	if sb != nil && sb != next && sb != nextSB {
		sb.release()
	}
}

// failed reports whether the standby's connect is over and got no
// connection, so that it is tried again rather than kept until a failover
// finds it wanting. Follower's goroutine only.
func (f *ReattachFollower) failed(sb *followedInstance) bool {
	if sb.connecting != nil {
		select {
		case c := <-sb.connecting:
			sb.connecting = nil
			f.mu.Lock()
			sb.merge(c)
			f.mu.Unlock()
		default:
			return false // still under way
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return sb.proto == nil
}

// markUsed notes that inst is active. Called with f.mu held.
func (inst *followedInstance) markUsed() {
	if inst != nil {
		inst.used = true
	}
}

// connectTimeout bounds the wait for a connect: go-plugin's Client and
// Dispense take no context, and a wedged instance must not hold up the
// switch (or Close).
const connectTimeout = 5 * time.Second

// connect makes a client of rec (unless given one), connects it and
// dispenses names from it, as far as it gets, in a goroutine of its own
// that ends when go-plugin's calls return, and delivers the result.
func (f *ReattachFollower) connect(rec *PluginReattach, client *plugin.Client, names []string) <-chan connected {
	out := make(chan connected, 1)
	go func() {
		c := connected{client: client, dispensed: map[string]any{}}
		defer func() { out <- c }()
		if c.client == nil {
			cfg, err := rec.ClientConfig(f.c, f.base)
			if err != nil {
				return
			}
			c.client = plugin.NewClient(cfg)
		}
		proto, err := c.client.Client()
		if err != nil {
			return
		}
		c.proto = proto
		for _, n := range names {
			if raw, err := proto.Dispense(n); err == nil {
				c.dispensed[n] = raw
			}
		}
	}()
	return out
}

// ready waits for inst's connect, then dispenses from it the names it
// lacks, each wait up to connectTimeout (an instance given up on is used
// as far as it got: the program's own Client or Dispense then tries, and
// reports). It is false when ctx ended.
func (f *ReattachFollower) ready(ctx context.Context, inst *followedInstance, names []string) bool {
	if inst.connecting != nil {
		c, ok := awaitConnect(ctx, inst.connecting)
		if !ok {
			return false
		}
		inst.connecting = nil
		f.mu.Lock()
		inst.merge(c)
		f.mu.Unlock()
	}
	f.mu.Lock()
	client, proto := inst.client, inst.proto
	var missing []string
	for _, n := range names {
		if _, ok := inst.dispensed[n]; !ok {
			missing = append(missing, n)
		}
	}
	f.mu.Unlock()
	if len(missing) == 0 || proto == nil {
		return true
	}
	c, ok := awaitConnect(ctx, f.connect(inst.rec, client, missing))
	if !ok {
		return false
	}
	f.mu.Lock()
	inst.merge(c)
	f.mu.Unlock()
	return true
}

// awaitConnect waits for a connect's result up to connectTimeout (then an
// empty result), or until ctx ends (ok false).
func awaitConnect(ctx context.Context, ch <-chan connected) (c connected, ok bool) {
	t := time.NewTimer(connectTimeout)
	defer t.Stop()
	select {
	case c := <-ch:
		return c, true
	case <-t.C:
		return connected{}, true
	case <-ctx.Done():
		return connected{}, false
	}
}

// merge takes what a connect made. Called with the follower's mu held.
func (inst *followedInstance) merge(c connected) {
	if inst.client == nil {
		inst.client, inst.proto = c.client, c.proto
	}
	for n, raw := range c.dispensed {
		if _, ok := inst.dispensed[n]; !ok {
			inst.dispensed[n] = raw
		}
	}
}

// release closes the connection of a standby that is no longer needed and
// was never active (nothing of it was handed out): a gRPC one, without
// go-plugin's Close, which would ask the plugin to shut down. A connect
// still under way is released when it is done, in its own goroutine.
func (inst *followedInstance) release() {
	if inst.used {
		return
	}
	closeConn := func(proto plugin.ClientProtocol) {
		if g, ok := proto.(*plugin.GRPCClient); ok {
			_ = g.Conn.Close()
		}
	}
	if inst.connecting != nil {
		ch := inst.connecting
		go func() { closeConn((<-ch).proto) }()
		return
	}
	closeConn(inst.proto)
}

// run follows the agent's answer and events for the plugin (see
// followActive) until ctx ends, keeping why the last subscription ended
// for the errors Dispense returns.
func (f *ReattachFollower) run(ctx context.Context) {
	defer close(f.done)
	defer func() {
		f.mu.Lock()
		sb := f.standby
		f.standby = nil
		f.mu.Unlock()
		if sb != nil {
			sb.release()
		}
	}()
	followActive(ctx, f.c, f.key(), f.sync, f.activeChanged, func(err error) {
		f.mu.Lock()
		f.lastErr = err
		f.mu.Unlock()
	})
}

// activeChanged handles a PluginActive event for the followed plugin.
func (f *ReattachFollower) activeChanged(ctx context.Context, inst *PluginInstance) error {
	switch {
	case inst == nil:
		f.set(ctx, nil, fmt.Errorf("plugin %s has no active instance", f.key()))
		return nil
	case inst.Reattach != nil:
		// The event carries the new instance's reattach record.
		f.set(ctx, inst.Reattach, nil)
		return nil
	}
	// An agent that does not send the record is asked.
	return f.sync(ctx)
}

// sync asks the agent for the active instance's record.
func (f *ReattachFollower) sync(ctx context.Context) error {
	rec, err := f.c.PluginReattach(ctx, f.typ, f.name)
	if errors.Is(err, ErrNotFound) {
		f.set(ctx, nil, err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("asking the agent for %s: %w", f.key(), err)
	}
	f.set(ctx, rec, nil)
	return nil
}
