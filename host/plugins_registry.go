package host

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/dynamic"
	apiserver "github.com/pluginhost/pluginhost/host/api"
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

// RegisteredPlugins implements apiserver.RegistryBackend: the registered
// plugins of every type (or of pluginType), then the plugins of other
// types than CSI's that allocations declare and nobody registered yet.
func (a *Agent) RegisteredPlugins(_ context.Context, pluginType string) ([]*api.PluginListStub, error) {
	declared := a.declaredGeneric()
	var csiDeclared map[string][]declaredTask
	types := a.registry.Types()
	if pluginType != "" {
		types = []string{pluginType}
	}
	var out []*api.PluginListStub
	listed := map[string]bool{}
	for _, t := range types {
		count, healthy := map[string]int{}, map[string]int{}
		for _, p := range a.registry.ListAllocs(t) {
			count[p.Name]++
			if h := a.instanceHealth(p); h.healthy {
				healthy[p.Name]++
			}
		}
		for _, p := range a.registry.List(t) {
			listed[genericKey(t, p.Name)] = true
			stub := &api.PluginListStub{Type: t, Name: p.Name, ActiveAllocID: p.AllocID, Instances: count[p.Name],
				Healthy: healthy[p.Name]}
			if p.ConnectionInfo != nil {
				stub.SocketPath = p.ConnectionInfo.SocketPath
			}
			if isCSIType(t) {
				if csiDeclared == nil {
					csiDeclared = a.declaredPlugins()
				}
				stub.Expected = expectedCSI(t, csiDeclared[p.Name])
			} else {
				stub.Expected = countAllocs(declared[genericKey(t, p.Name)])
			}
			out = append(out, stub)
		}
	}
	for k, tasks := range declared {
		typ, name, _ := strings.Cut(k, "/")
		if listed[k] || (pluginType != "" && typ != pluginType) {
			continue
		}
		out = append(out, &api.PluginListStub{Type: typ, Name: name, Expected: countAllocs(tasks)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Type != out[j].Type {
			return out[i].Type < out[j].Type
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// RegisteredPlugin implements apiserver.RegistryBackend: a plugin is there once
// registered or, for types other than CSI's, declared by an allocation
// that should run; the declaring allocations that have not registered it
// are Waiting, with why.
func (a *Agent) RegisteredPlugin(_ context.Context, pluginType, name string) (*api.Plugin, error) {
	out := &api.Plugin{Type: pluginType, Name: name}
	act, registered := a.registry.Active(pluginType, name)
	var tasks []declaredTask
	if isCSIType(pluginType) {
		tasks = a.declaredPlugins()[name]
		out.Expected = expectedCSI(pluginType, tasks)
	} else {
		tasks = a.declaredGeneric()[genericKey(pluginType, name)]
		out.Expected = countAllocs(tasks)
	}
	if !registered && (isCSIType(pluginType) || len(tasks) == 0) {
		return nil, api.ErrNotFound
	}
	taskOf := map[string]string{}
	for _, d := range tasks {
		taskOf[d.alloc.runner.ID()] = d.task
	}
	seen := map[string]bool{}
	for _, p := range a.registry.ListAllocs(pluginType) {
		if p.Name != name {
			continue
		}
		inst := pluginInstance(p, registered && p.AllocID == act.AllocID)
		h := a.instanceHealth(p)
		inst.Task, inst.Healthy, inst.HealthDescription, inst.CheckTime = taskOf[p.AllocID], h.healthy, h.description, h.at
		if inst.Active {
			out.Active = inst
		}
		if inst.Healthy {
			out.Healthy++
		}
		seen[p.AllocID] = true
		out.Instances = append(out.Instances, inst)
	}
	if isCSIType(pluginType) {
		// CSI's declared view is GET /v1/plugin/csi/ID's.
		return out, nil
	}
	for _, d := range tasks {
		snap := d.alloc.runner.State()
		if seen[snap.Alloc.ID] {
			continue
		}
		seen[snap.Alloc.ID] = true
		inst := &api.PluginInstance{Type: pluginType, Name: name, AllocID: snap.Alloc.ID, Task: d.task,
			HealthDescription: whyNotHealthy(snap, d.task, "its health check", "")}
		if h, ok := a.health.Get(pluginType, name, snap.Alloc.ID); ok && !h.Healthy {
			// The supervision's latest check is fresher than the events.
			inst.HealthDescription, inst.CheckTime = h.Description, h.CheckedAt
		}
		out.Waiting = append(out.Waiting, inst)
	}
	sort.Slice(out.Waiting, func(i, j int) bool { return out.Waiting[i].AllocID < out.Waiting[j].AllocID })
	return out, nil
}

// instanceHealthView is one registered allocation's latest health check.
type instanceHealthView struct {
	healthy     bool
	description string
	at          time.Time
}

// instanceHealth is what the agent knows of a registered allocation's
// health: a CSI plugin's from the CSI manager's fingerprint (of the active
// instances only), any other's from its supervision's latest check.
func (a *Agent) instanceHealth(p *dynamic.PluginInfo) instanceHealthView {
	if isCSIType(p.Type) {
		if st, ok := a.csi.Plugin(p.Name); ok {
			for _, fp := range st.Allocations {
				if fp.Type == p.Type && fp.AllocID == p.AllocID {
					return instanceHealthView{fp.Healthy, fp.HealthDescription, fp.LastFingerprint}
				}
			}
		}
		return instanceHealthView{description: "not fingerprinted (standing by)"}
	}
	h, ok := a.health.Get(p.Type, p.Name, p.AllocID)
	if !ok {
		return instanceHealthView{description: "not checked yet"}
	}
	return instanceHealthView{h.Healthy, h.Description, h.CheckedAt}
}

// isCSIType: the registry's CSI types; the job parser keeps other plugin
// types from starting with "csi".
func isCSIType(t string) bool {
	return t == dynamic.PluginTypeCSIController || t == dynamic.PluginTypeCSINode
}

// expectedCSI counts the tasks that declare a CSI plugin's half of type t.
func expectedCSI(t string, tasks []declaredTask) int {
	n := 0
	for _, d := range tasks {
		if (t == dynamic.PluginTypeCSIController && d.controller()) || (t == dynamic.PluginTypeCSINode && d.node()) {
			n++
		}
	}
	return n
}

// countAllocs counts the allocations among declaring tasks (a group may
// not declare one plugin twice, but be exact).
func countAllocs(tasks []declaredTask) int {
	seen := map[*allocEntry]bool{}
	for _, d := range tasks {
		seen[d.alloc] = true
	}
	return len(seen)
}

// genericPluginType is the registry type a task's go_plugin config
// declares, "" for other tasks.
func genericPluginType(t *jobspec.Task) string {
	if p := t.GenericPlugin(); p != nil {
		return p.Type
	}
	return ""
}

var _ apiserver.RegistryBackend = (*Agent)(nil)
