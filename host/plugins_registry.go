package host

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/csi/plugins"
	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/apiconv"
	"github.com/pluginhost/pluginhost/host/apiserver"
	"github.com/pluginhost/pluginhost/host/jobs"
	"github.com/pluginhost/pluginhost/host/supervisor"
)

// RegisteredPlugins implements apiserver.RegistryBackend: the registered
// plugins of every type (or of pluginType), then the plugins of other
// types than CSI's that allocations declare and nobody registered yet.
func (a *Agent) RegisteredPlugins(_ context.Context, pluginType string) ([]*api.PluginListStub, error) {
	declared := a.jobs.DeclaredGeneric()
	var csiDeclared map[string][]jobs.DeclaredTask
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
			if h := instanceHealth(a.csi, a.health, p); h.healthy {
				healthy[p.Name]++
			}
		}
		for _, p := range a.registry.List(t) {
			listed[jobs.GenericKey(t, p.Name)] = true
			stub := &api.PluginListStub{Type: t, Name: p.Name, ActiveAllocID: p.AllocID, Instances: count[p.Name],
				Healthy: healthy[p.Name]}
			if p.ConnectionInfo != nil {
				stub.SocketPath = p.ConnectionInfo.SocketPath
			}
			if isCSIType(t) {
				if csiDeclared == nil {
					csiDeclared = a.jobs.DeclaredCSI()
				}
				stub.Expected = jobs.ExpectedCSI(t, csiDeclared[p.Name])
			} else {
				stub.Expected = jobs.CountAllocs(declared[jobs.GenericKey(t, p.Name)])
			}
			out = append(out, stub)
		}
	}
	for k, tasks := range declared {
		typ, name, _ := strings.Cut(k, "/")
		if listed[k] || (pluginType != "" && typ != pluginType) {
			continue
		}
		out = append(out, &api.PluginListStub{Type: typ, Name: name, Expected: jobs.CountAllocs(tasks)})
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
	var tasks []jobs.DeclaredTask
	if isCSIType(pluginType) {
		tasks = a.jobs.DeclaredCSI()[name]
		out.Expected = jobs.ExpectedCSI(pluginType, tasks)
	} else {
		tasks = a.jobs.DeclaredGeneric()[jobs.GenericKey(pluginType, name)]
		out.Expected = jobs.CountAllocs(tasks)
	}
	if !registered && (isCSIType(pluginType) || len(tasks) == 0) {
		return nil, api.ErrNotFound
	}
	taskOf := map[string]string{}
	for _, d := range tasks {
		taskOf[d.Snap.Alloc.ID] = d.Task
	}
	seen := map[string]bool{}
	for _, p := range a.registry.ListAllocs(pluginType) {
		if p.Name != name {
			continue
		}
		inst := apiconv.PluginInstance(p, registered && p.AllocID == act.AllocID)
		h := instanceHealth(a.csi, a.health, p)
		inst.Task, inst.Healthy, inst.HealthDescription, inst.CheckTime = taskOf[p.AllocID], h.healthy, h.description, h.at
		inst.BrokerLeases = a.brokerLeases(launchKey{pluginType, name, p.AllocID, p.Options[supervisor.OptionGoPluginPid]})
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
		snap := d.Snap
		if seen[snap.Alloc.ID] {
			continue
		}
		seen[snap.Alloc.ID] = true
		inst := &api.PluginInstance{Type: pluginType, Name: name, AllocID: snap.Alloc.ID, Task: d.Task,
			HealthDescription: apiconv.WhyNotHealthy(snap, d.Task, "its health check", "")}
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
func instanceHealth(mgr *plugins.Manager, health *supervisor.HealthTable, p *dynamic.PluginInfo) instanceHealthView {
	if isCSIType(p.Type) {
		if st, ok := mgr.Plugin(p.Name); ok {
			for _, fp := range st.Allocations {
				if fp.Type == p.Type && fp.AllocID == p.AllocID {
					return instanceHealthView{fp.Healthy, fp.HealthDescription, fp.LastFingerprint}
				}
			}
		}
		return instanceHealthView{description: "not fingerprinted (standing by)"}
	}
	h, ok := health.Get(p.Type, p.Name, p.AllocID)
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

var _ apiserver.RegistryBackend = (*Agent)(nil)
