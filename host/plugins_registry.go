package host

import (
	"context"
	"fmt"
	"sync"

	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/api"
	"github.com/pluginhost/pluginhost/host/jobspec"
)

// The registry holds plugins of any type: CSI's two and whatever types
// generic plugins declare. The agent does not know the latter in advance,
// so it follows a type's registry events from the moment a task that
// declares it gets its supervisor (before it can register), or from start
// for types restored from the state file.

// typeFollower subscribes to each plugin type once.
type typeFollower struct {
	mu       sync.Mutex
	ctx      context.Context // Run's; nil until Run starts following
	followed map[string]bool
	pending  []string
}

// followType makes sure the agent turns pluginType's registry events into
// API events. Before Run it only remembers the type.
func (a *Agent) followType(pluginType string) {
	f := &a.follower
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
	a.subscribeType(f.ctx, pluginType)
}

// followRegistry starts following CSI's types, every type restored from
// the state file and every type declared before Run.
func (a *Agent) followRegistry(ctx context.Context) {
	f := &a.follower
	f.mu.Lock()
	f.ctx = ctx
	pending := f.pending
	f.pending = nil
	f.mu.Unlock()
	for _, t := range pending {
		a.subscribeType(ctx, t)
	}
	for _, t := range append([]string{dynamic.PluginTypeCSIController, dynamic.PluginTypeCSINode}, a.registry.Types()...) {
		a.followType(t)
	}
}

// subscribeType publishes each registry event of pluginType twice: as a
// Registry-topic event (what happened) and as a Plugin-topic
// EventPluginActive event (which instance is active now), which is what
// the resolver needs.
func (a *Agent) subscribeType(ctx context.Context, pluginType string) {
	ch := a.registry.Subscribe(ctx, pluginType)
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for ev := range ch {
			msg := fmt.Sprintf("%s %s allocation %s", ev.Info.Type, ev.Info.Name, ev.Info.AllocID)
			if ev.Active {
				msg += " (active)"
			}
			a.events.publish(&api.Event{
				Topic: api.TopicRegistry, Type: ev.Type.String(), Key: ev.Info.Name,
				Payload: api.EventPayload{AllocID: ev.Info.AllocID, PluginType: ev.Info.Type, Message: msg},
			})
			var inst *api.PluginInstance
			if act, ok := a.registry.Active(ev.Info.Type, ev.Info.Name); ok {
				inst = pluginInstance(act, true)
			}
			a.events.publish(&api.Event{
				Topic: api.TopicPlugin, Type: api.EventPluginActive, Key: ev.Info.Type + "/" + ev.Info.Name,
				Payload: api.EventPayload{PluginType: ev.Info.Type, PluginName: ev.Info.Name, Instance: inst, Message: msg},
			})
		}
	}()
}

func pluginInstance(p *dynamic.PluginInfo, active bool) *api.PluginInstance {
	inst := &api.PluginInstance{Type: p.Type, Name: p.Name, AllocID: p.AllocID, Version: p.Version,
		Active: active, RegisteredAt: p.RegisteredAt}
	if p.ConnectionInfo != nil {
		inst.SocketPath = p.ConnectionInfo.SocketPath
	}
	return inst
}

// RegisteredPlugins implements api.RegistryBackend.
func (a *Agent) RegisteredPlugins(_ context.Context, pluginType string) ([]*api.PluginListStub, error) {
	types := a.registry.Types()
	if pluginType != "" {
		types = []string{pluginType}
	}
	var out []*api.PluginListStub
	for _, t := range types {
		count := map[string]int{}
		for _, p := range a.registry.ListAllocs(t) {
			count[p.Name]++
		}
		for _, p := range a.registry.List(t) {
			stub := &api.PluginListStub{Type: t, Name: p.Name, ActiveAllocID: p.AllocID, Instances: count[p.Name]}
			if p.ConnectionInfo != nil {
				stub.SocketPath = p.ConnectionInfo.SocketPath
			}
			out = append(out, stub)
		}
	}
	return out, nil
}

// RegisteredPlugin implements api.RegistryBackend.
func (a *Agent) RegisteredPlugin(_ context.Context, pluginType, name string) (*api.Plugin, error) {
	act, ok := a.registry.Active(pluginType, name)
	if !ok {
		return nil, api.ErrNotFound
	}
	out := &api.Plugin{Type: pluginType, Name: name, Active: pluginInstance(act, true)}
	for _, p := range a.registry.ListAllocs(pluginType) {
		if p.Name == name {
			out.Instances = append(out.Instances, pluginInstance(p, p.AllocID == act.AllocID))
		}
	}
	return out, nil
}

// genericPluginType is the registry type a task's go_plugin config
// declares, "" for other tasks.
func genericPluginType(t *jobspec.Task) string {
	if t == nil || t.Driver != jobspec.DriverGoPlugin || t.Config == nil || t.Config.Plugin == nil {
		return ""
	}
	return t.Config.Plugin.Type
}

var _ api.RegistryBackend = (*Agent)(nil)
