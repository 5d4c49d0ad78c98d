package api

import "time"

// EventPluginActive is the type of the Plugin-topic event the agent sends
// whenever a registration of a plugin changes (any type, CSI's included):
// Key is "TYPE/NAME", Payload.Instance the active instance afterwards (nil
// when none is left). The resolver follows these.
const EventPluginActive = "PluginActiveInstance"

// tcpPrefix marks a PluginInstance.SocketPath that is a TCP address.
const tcpPrefix = "tcp://"

// PluginInstance is one allocation's registration of a plugin in the
// agent's registry: where a consumer reaches it.
type PluginInstance struct {
	Type    string
	Name    string
	AllocID string
	Version string `json:",omitempty"`
	// SocketPath is the plugin's unix socket, or tcp://HOST:PORT (a
	// loopback address) for a plugin that serves TCP, as go-plugin's
	// Python example does: consumers dial it directly with plain gRPC.
	SocketPath string
	// Active is whether this is the instance consumers should use (the
	// newest registration of the plugin).
	Active       bool
	RegisteredAt time.Time `json:",omitzero"`
	// Reattach is go-plugin's reattach record of a go-plugin plugin's
	// instance, in the registry's events (the follower switches on it
	// without asking the agent again); nil for CSI plugins.
	Reattach *PluginReattach `json:",omitempty"`

	// The fields below are set in GET /v1/plugin/TYPE/NAME, not in
	// events. Task is the task that provides the plugin; Healthy and
	// HealthDescription are its latest health check (for a plugin that
	// is not registered: why not), CheckTime when that was.
	Task              string    `json:",omitempty"`
	Healthy           bool      `json:",omitempty"`
	HealthDescription string    `json:",omitempty"`
	CheckTime         time.Time `json:",omitzero"`
	// BrokerLeases counts the consumers holding a go-plugin broker lease
	// on this launch (api.HostedClientConfig): when the last one ends, the
	// agent restarts the launch so that callbacks work again.
	BrokerLeases int `json:",omitempty"`
}

// PluginListStub is one row of GET /v1/registry/plugins: a plugin of any
// type that is registered or, for types other than CSI's, declared by an
// allocation that should run (then ActiveAllocID is "" and Instances 0).
type PluginListStub struct {
	Type string
	Name string
	// Active is the active instance's allocation; Instances counts every
	// registered allocation (more than one during a rolling update).
	ActiveAllocID string
	SocketPath    string
	Instances     int
	// Healthy counts the registered allocations whose latest health check
	// passed (CSI types: the CSI manager's fingerprints); Expected the
	// allocations meant to run that declare the plugin.
	Healthy  int
	Expected int
}

// Plugin is GET /v1/plugin/TYPE/NAME: one plugin, registered or declared
// by an allocation that should run, and every allocation behind it.
type Plugin struct {
	Type string
	Name string
	// Active is nil while no allocation is registered.
	Active *PluginInstance
	// Instances are the registered allocations, oldest first.
	Instances []*PluginInstance
	// Waiting are the allocations that declare the plugin but have not
	// registered it (starting, failing their health check, waiting for a
	// restart), each with why in HealthDescription; no SocketPath.
	Waiting  []*PluginInstance `json:",omitempty"`
	Healthy  int
	Expected int
}

// PluginStatusListStub is one row of GET /v1/plugins (no type, or a type
// other than csi): every plugin the agent knows, whatever its type. A CSI
// plugin has Type "csi" and the fields of CSIPluginListStub (as GET
// /v1/plugins?type=csi has them); a plugin of another type has its type,
// ID "TYPE/NAME" (what `plugin status` takes) and the fields of
// PluginListStub. Exactly one of the two embedded stubs is set.
type PluginStatusListStub struct {
	ID   string
	Type string
	*CSIPluginListStub
	*PluginListStub
}

// PluginTypeCSI is PluginStatusListStub.Type of a CSI plugin.
const PluginTypeCSI = "csi"
