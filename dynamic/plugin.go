package dynamic

import (
	"maps"
	"time"
)

// Plugin types known to pluginhost. The registry itself accepts any non-empty
// type string; these are the ones the CSI manager follows.
const (
	PluginTypeCSIController = "csi-controller"
	PluginTypeCSINode       = "csi-node"
)

// PluginInfo describes one registered allocation of a plugin. The triple
// (Type, Name, AllocID) identifies it.
type PluginInfo struct {
	Type    string
	Name    string
	Version string
	AllocID string

	// ConnectionInfo says how to reach the plugin.
	ConnectionInfo *ConnectionInfo

	// Options is free-form data for the plugin type's consumer (for CSI: the
	// mount dirs the supervisor chose).
	Options map[string]string

	// Seq orders registrations: among the allocations of one (Type, Name) the
	// one with the highest Seq is active. The registry assigns it; callers of
	// Register leave it zero. It is persisted so that a restored registry
	// picks the same active instance.
	Seq uint64

	// RegisteredAt is when this allocation was first registered.
	RegisteredAt time.Time
}

// ConnectionInfo says how to reach a plugin instance. There is room for more
// transports; today every plugin is a gRPC server on a unix socket.
type ConnectionInfo struct {
	// SocketPath is the absolute path of the plugin's unix socket.
	SocketPath string
}

// Copy returns a deep copy, so that callers can never mutate registry state.
func (p *PluginInfo) Copy() *PluginInfo {
	if p == nil {
		return nil
	}
	c := *p
	if p.ConnectionInfo != nil {
		ci := *p.ConnectionInfo
		c.ConnectionInfo = &ci
	}
	c.Options = maps.Clone(p.Options)
	return &c
}

// Store is where the registry persists itself. Every method is called with the
// registry's write lock held and before Register/Deregister returns, so an
// implementation must be durable when it returns and must cost the same
// whatever the number of stored plugins (write one record, not the whole set).
type Store interface {
	// PutPlugin inserts or replaces the record keyed by (Type, Name, AllocID).
	PutPlugin(info *PluginInfo) error
	// DeletePlugin removes one record; deleting a missing record is not an error.
	DeletePlugin(pluginType, name, allocID string) error
	// Plugins returns every stored record, in any order.
	Plugins() ([]*PluginInfo, error)
}
