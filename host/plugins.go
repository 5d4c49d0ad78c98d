package host

import (
	"context"
	"sort"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/apiconv"
	"github.com/pluginhost/pluginhost/host/apiserver"
)

// Plugins lists the CSI plugins the manager knows.
func (a *Agent) Plugins(ctx context.Context) ([]*api.CSIPluginListStub, error) {
	plugins := a.csi.Plugins()
	out := make([]*api.CSIPluginListStub, 0, len(plugins))
	known := map[string]bool{}
	for _, p := range plugins {
		known[p.ID] = true
		out = append(out, &api.CSIPluginListStub{
			ID: p.ID, Provider: p.Provider, ControllerRequired: p.ControllerRequired,
			ControllersHealthy: p.ControllersHealthy, ControllersExpected: p.ControllersExpected,
			NodesHealthy: p.NodesHealthy, NodesExpected: p.NodesExpected,
		})
	}
	for id, tasks := range a.jobs.DeclaredCSI() {
		if !known[id] {
			out = append(out, apiconv.UnregisteredStub(id, tasks))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Plugin describes one CSI plugin: its fingerprints, the allocations behind
// it and which of them is active.
func (a *Agent) Plugin(ctx context.Context, id string) (*api.CSIPlugin, error) {
	p, ok := a.csi.Plugin(id)
	if !ok {
		if tasks := a.jobs.DeclaredCSI()[id]; len(tasks) > 0 {
			return apiconv.UnregisteredPlugin(id, tasks), nil
		}
		return nil, api.ErrNotFound
	}
	out := &api.CSIPlugin{
		ID: p.ID, Provider: p.Provider, Version: p.Version, ControllerRequired: p.ControllerRequired,
		ControllersHealthy: p.ControllersHealthy, ControllersExpected: p.ControllersExpected,
		NodesHealthy: p.NodesHealthy, NodesExpected: p.NodesExpected,
		Controllers: map[string]*api.CSIInfo{}, Nodes: map[string]*api.CSIInfo{},
	}
	for _, fp := range p.Allocations {
		info := apiconv.CSIInfo(fp, p.ControllerRequired)
		if fp.Type == dynamic.PluginTypeCSIController {
			out.Controllers[fp.AllocID] = info
		} else {
			out.Nodes[fp.AllocID] = info
		}
	}
	if act, ok := a.registry.Active(dynamic.PluginTypeCSIController, id); ok {
		out.ActiveController = act.AllocID
	}
	if act, ok := a.registry.Active(dynamic.PluginTypeCSINode, id); ok {
		out.ActiveNode = act.AllocID
	}
	// Every registered allocation backs the plugin, also the standby ones
	// of a rolling update that the manager does not fingerprint.
	seen := map[string]bool{}
	for _, typ := range []string{dynamic.PluginTypeCSIController, dynamic.PluginTypeCSINode} {
		for _, info := range a.registry.ListAllocs(typ) {
			if info.Name != id || seen[info.AllocID] {
				continue
			}
			seen[info.AllocID] = true
			if ar := a.jobs.Alloc(info.AllocID); ar != nil {
				out.Allocations = append(out.Allocations, apiconv.Allocation(ar.State(), ar.AllocDir()).Stub())
			} else {
				out.Allocations = append(out.Allocations, &api.AllocListStub{ID: info.AllocID, ClientStatus: "unknown"})
			}
		}
	}
	sort.Slice(out.Allocations, func(i, j int) bool { return out.Allocations[i].CreateTime > out.Allocations[j].CreateTime })
	return out, nil
}

// Events subscribes to the agent's live event stream.
func (a *Agent) Events(ctx context.Context, from uint64) (<-chan *api.Event, error) {
	return a.events.Subscribe(ctx, from), nil
}

// Self describes the agent.
func (a *Agent) Self(ctx context.Context) (*api.AgentSelf, error) {
	return &api.AgentSelf{
		Version: Version, NodeName: a.cfg.NodeName, DataDir: a.cfg.DataDir, Addr: a.Addr(),
		Ready: a.ready.Load(), StartTime: a.startTime,
		Containment: apiconv.Containment(a.cgroups),
		EventIndex:  a.events.Index(),
	}, nil
}

// SetAddr records the address the HTTP API listens on, for Self.
func (a *Agent) SetAddr(addr string) {
	a.mu.Lock()
	a.addr = addr
	a.mu.Unlock()
}

// Addr is the address the HTTP API listens on, once known.
func (a *Agent) Addr() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.addr
}

var _ apiserver.Backend = (*Agent)(nil)
