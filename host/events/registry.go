package events

import (
	"context"
	"fmt"
	"sync"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/apiconv"
)

// The registry holds plugins of any type: CSI's two and whatever types
// generic plugins declare. The agent does not know the latter in advance,
// so it follows a type's registry events from the moment a task that
// declares it gets its supervisor (before it can register), or from start
// for types restored from the state file.

// NewRegistryFollower follows reg's plugin types into publish; its
// goroutines are counted in wg, which their owner waits on.
func NewRegistryFollower(reg *dynamic.Registry, publish func(*api.Event), wg *sync.WaitGroup) *RegistryFollower {
	return &RegistryFollower{registry: reg, publish: publish, wg: wg}
}

// RegistryFollower subscribes to each plugin type once and publishes its
// registry events as API events.
type RegistryFollower struct {
	registry *dynamic.Registry
	publish  func(*api.Event)
	wg       *sync.WaitGroup // the owner's: its shutdown waits for the subscribers

	mu       sync.Mutex
	ctx      context.Context // Run's; nil until Run starts following
	followed map[string]bool
	pending  []string
}

// Follow makes sure pluginType's registry events become API events.
// Before start it only remembers the type.
func (f *RegistryFollower) Follow(pluginType string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.followed[pluginType] {
		return
	}
	if f.followed == nil {
		f.followed = map[string]bool{}
	}
	f.followed[pluginType] = true
	if f.ctx == nil {
		f.pending = append(f.pending, pluginType)
		return
	}
	f.subscribe(f.ctx, pluginType)
}

// Start follows CSI's types, every type restored from the state file and
// every type declared before it, until ctx ends.
func (f *RegistryFollower) Start(ctx context.Context) {
	f.mu.Lock()
	f.ctx = ctx
	pending := f.pending
	f.pending = nil
	f.mu.Unlock()
	for _, t := range pending {
		f.subscribe(ctx, t)
	}
	for _, t := range append([]string{dynamic.PluginTypeCSIController, dynamic.PluginTypeCSINode}, f.registry.Types()...) {
		f.Follow(t)
	}
}

// subscribe publishes each registry event of pluginType twice: as a
// Registry-topic event (what happened) and as a Plugin-topic
// EventPluginActive event (which instance is active now), which is what
// the resolver needs.
func (f *RegistryFollower) subscribe(ctx context.Context, pluginType string) {
	ch := f.registry.Subscribe(ctx, pluginType)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for ev := range ch {
			msg := fmt.Sprintf("%s %s allocation %s", ev.Info.Type, ev.Info.Name, ev.Info.AllocID)
			if ev.Active {
				msg += " (active)"
			}
			f.publish(&api.Event{
				Topic: api.TopicRegistry, Type: ev.Type.String(), Key: ev.Info.Name,
				Payload: api.EventPayload{AllocID: ev.Info.AllocID, PluginType: ev.Info.Type, Message: msg},
			})
			var inst *api.PluginInstance
			if act, standby := f.registry.ActiveAndStandby(ev.Info.Type, ev.Info.Name); act != nil {
				inst = apiconv.PluginInstance(act, true)
				if rec, err := apiconv.PluginReattachWithStandby(act.Type, act.Name, act, standby); err == nil {
					inst.Reattach = rec
				}
			}
			f.publish(&api.Event{
				Topic: api.TopicPlugin, Type: api.EventPluginActive, Key: ev.Info.Type + "/" + ev.Info.Name,
				Payload: api.EventPayload{PluginType: ev.Info.Type, PluginName: ev.Info.Name, Instance: inst, Message: msg},
			})
		}
	}()
}
