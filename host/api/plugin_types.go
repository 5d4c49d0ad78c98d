package api

import "time"

// EventPluginActive is the type of the Plugin-topic event the agent sends
// whenever a registration of a plugin changes (any type, CSI's included):
// Key is "TYPE/NAME", Payload.Instance the active instance afterwards (nil
// when none is left). The resolver follows these.
const EventPluginActive = "PluginActiveInstance"

// PluginInstance is one allocation's registration of a plugin in the
// agent's registry: where a consumer reaches it.
type PluginInstance struct {
	Type    string
	Name    string
	AllocID string
	Version string `json:",omitempty"`
	// SocketPath is the plugin's unix socket: consumers dial it directly
	// with plain gRPC.
	SocketPath string
	// Active is whether this is the instance consumers should use (the
	// newest registration of the plugin).
	Active       bool
	RegisteredAt time.Time
}

// PluginListStub is one row of GET /v1/registry/plugins: a registered
// plugin of any type.
type PluginListStub struct {
	Type string
	Name string
	// Active is the active instance's allocation; Instances counts every
	// registered allocation (more than one during a rolling update).
	ActiveAllocID string
	SocketPath    string
	Instances     int
}

// Plugin is GET /v1/plugin/TYPE/NAME: one registered plugin and every
// allocation behind it, oldest first.
type Plugin struct {
	Type      string
	Name      string
	Active    *PluginInstance
	Instances []*PluginInstance
}
