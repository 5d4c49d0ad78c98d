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
// A client of an instance that is no longer active is left alone, not
// closed under calls still in flight: its connection ends with the old
// instance.
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
	// lastErr is why there is no instance, for callers that give up.
	lastErr error
}

// followedInstance is one active instance and what was made for it.
type followedInstance struct {
	rec       *PluginReattach
	client    *plugin.Client
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

// Current is the active instance's record (nil while there is none) and a
// channel closed at the next change.
func (f *ReattachFollower) Current() (*PluginReattach, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cur == nil {
		return nil, f.changed
	}
	r := *f.cur.rec
	return &r, f.changed
}

// Client is a go-plugin client of the active instance, reattached, made on
// first use per instance. It waits for an active instance until ctx ends.
func (f *ReattachFollower) Client(ctx context.Context) (*plugin.Client, error) {
	inst, err := f.instance(ctx)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if inst.client == nil {
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
	pc, err := f.Client(ctx)
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

// set makes rec (nil: none) the active instance, unless it is the same.
//
// A new instance is connected before it is published: its client made and
// every name the program dispensed from the previous instance dispensed
// again, here in the follower's goroutine. Until then the program keeps
// using the previous instance, which during a rolling update still serves;
// after the switch its first call costs one RPC, not a reattach (measured:
// that halves the switch time). What fails here is left for the program's
// own Client or Dispense to retry and report.
func (f *ReattachFollower) set(ctx context.Context, rec *PluginReattach, why error) {
	f.mu.Lock()
	f.lastErr = why
	if (rec == nil && f.cur == nil) || (rec != nil && f.cur != nil && *rec == *f.cur.rec) {
		f.mu.Unlock()
		return
	}
	var names []string
	if f.cur != nil {
		for n := range f.cur.dispensed {
			names = append(names, n)
		}
	}
	f.mu.Unlock()

	var next *followedInstance
	if rec != nil {
		var ok bool
		if next, ok = f.connectBounded(ctx, rec, names); !ok {
			return // closing
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cur = next
	close(f.changed)
	f.changed = make(chan struct{})
}

// connectTimeout bounds connect: go-plugin's Client and Dispense take no
// context, and a wedged instance must not hold up the switch (or Close).
const connectTimeout = 5 * time.Second

// connectBounded is connect, given up after connectTimeout (the instance is
// then published without a client: the program's own Client or Dispense
// tries, and reports) or when ctx ends (ok false). A connect given up on
// finishes in its goroutine when its connection does.
func (f *ReattachFollower) connectBounded(ctx context.Context, rec *PluginReattach, names []string) (inst *followedInstance, ok bool) {
	done := make(chan *followedInstance, 1)
	go func() { done <- f.connect(rec, names) }()
	t := time.NewTimer(connectTimeout)
	defer t.Stop()
	select {
	case inst := <-done:
		return inst, true
	case <-t.C:
		return &followedInstance{rec: rec, dispensed: map[string]any{}}, true
	case <-ctx.Done():
		return nil, false
	}
}

// connect makes a client of rec and dispenses names from it, as far as it
// gets.
func (f *ReattachFollower) connect(rec *PluginReattach, names []string) *followedInstance {
	inst := &followedInstance{rec: rec, dispensed: map[string]any{}}
	cfg, err := rec.ClientConfig(f.c, f.base)
	if err != nil {
		return inst
	}
	inst.client = plugin.NewClient(cfg)
	if len(names) == 0 {
		return inst
	}
	rpc, err := inst.client.Client()
	if err != nil {
		return inst
	}
	for _, n := range names {
		if raw, err := rpc.Dispense(n); err == nil {
			inst.dispensed[n] = raw
		}
	}
	return inst
}

// run follows the agent's answer and events for the plugin (see
// followActive) until ctx ends, keeping why the last subscription ended
// for the errors Dispense returns.
func (f *ReattachFollower) run(ctx context.Context) {
	defer close(f.done)
	followActive(ctx, f.c, f.key(), f.sync, f.activeChanged, func(err error) {
		f.mu.Lock()
		f.lastErr = err
		f.mu.Unlock()
	})
}

// activeChanged handles a PluginActive event for the followed plugin.
func (f *ReattachFollower) activeChanged(ctx context.Context, inst *PluginInstance) error {
	switch {
	case f.sameInstance(inst):
		return nil
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

// sameInstance: the event names the instance already followed.
func (f *ReattachFollower) sameInstance(inst *PluginInstance) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if inst == nil || f.cur == nil {
		return inst == nil && f.cur == nil
	}
	return inst.AllocID == f.cur.rec.AllocID && inst.SocketPath == f.cur.rec.Addr
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
