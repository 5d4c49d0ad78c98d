package plugins

import (
	"cmp"
	"slices"

	"github.com/pluginhost/pluginhost/csi"
	"github.com/pluginhost/pluginhost/dynamic"
)

// PluginStatus is the state of one plugin (one plugin ID) across its
// allocations: what `pluginhost plugin status` shows. It is a snapshot; the
// manager never changes it after handing it out.
type PluginStatus struct {
	// ID is the plugin's registered name.
	ID string
	// Provider and Version come from the plugin's fingerprints (GetPluginInfo);
	// empty until one has succeeded.
	Provider string
	Version  string

	// ControllerRequired is set when a node allocation's driver advertises
	// CONTROLLER_SERVICE: volumes of this plugin then need a healthy
	// controller before they can be published.
	ControllerRequired bool

	// The counts follow Nomad's CSIPlugin: Expected counts the allocations
	// being fingerprinted (one active allocation per type on this machine),
	// Healthy those whose latest fingerprint was healthy.
	ControllersHealthy  int
	ControllersExpected int
	NodesHealthy        int
	NodesExpected       int

	// Allocations holds each allocation's fingerprint, controllers first,
	// then by alloc ID.
	Allocations []*Fingerprint
}

// Healthy reports whether every expected controller and node is healthy and
// there is at least one.
func (p *PluginStatus) Healthy() bool {
	return p.ControllersExpected+p.NodesExpected > 0 &&
		p.ControllersHealthy == p.ControllersExpected &&
		p.NodesHealthy == p.NodesExpected
}

// count adds an allocation's fingerprint to the status's counts (not to
// Allocations); it keeps nothing of f.
func (p *PluginStatus) count(f *Fingerprint) {
	if p.Provider == "" && f.Provider != "" {
		p.Provider, p.Version = f.Provider, f.ProviderVersion
	}
	switch f.Type {
	case dynamic.PluginTypeCSIController:
		p.ControllersExpected++
		if f.Healthy {
			p.ControllersHealthy++
		}
	case dynamic.PluginTypeCSINode:
		p.NodesExpected++
		if f.Healthy {
			p.NodesHealthy++
		}
		if f.HasPluginCapability(csi.CapControllerService) {
			p.ControllerRequired = true
		}
	}
}

// Controller returns the fingerprint of the plugin's controller allocation,
// or nil.
func (p *PluginStatus) Controller() *Fingerprint { return p.byType(dynamic.PluginTypeCSIController) }

// Node returns the fingerprint of the plugin's node allocation, or nil.
func (p *PluginStatus) Node() *Fingerprint { return p.byType(dynamic.PluginTypeCSINode) }

func (p *PluginStatus) byType(t string) *Fingerprint {
	for _, f := range p.Allocations {
		if f.Type == t {
			return f
		}
	}
	return nil
}

// buildStatuses groups fingerprints by plugin ID, sorted by ID.
func buildStatuses(fps []*Fingerprint) []*PluginStatus {
	byID := make(map[string]*PluginStatus)
	for _, f := range fps {
		s, ok := byID[f.PluginID]
		if !ok {
			s = &PluginStatus{ID: f.PluginID}
			byID[f.PluginID] = s
		}
		s.Allocations = append(s.Allocations, f)
		s.count(f)
	}
	out := make([]*PluginStatus, 0, len(byID))
	for _, s := range byID {
		slices.SortFunc(s.Allocations, func(a, b *Fingerprint) int {
			return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.AllocID, b.AllocID))
		})
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *PluginStatus) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
