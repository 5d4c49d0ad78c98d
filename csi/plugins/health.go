package plugins

import (
	"fmt"
	"time"
)

// HealthEvent reports that a plugin allocation's health changed, or was
// learned for the first time. The agent turns these into its event stream.
type HealthEvent struct {
	PluginID string
	// Type is dynamic.PluginTypeCSIController or dynamic.PluginTypeCSINode.
	Type    string
	AllocID string
	Healthy bool
	// Description says why: "healthy", "probe failed: ...", "agent
	// shutting down".
	Description string
	Time        time.Time
}

// String renders the event for humans, e.g. "plugin hostpath (csi-node,
// alloc 1f2e) became unhealthy: probe failed: ...".
func (e HealthEvent) String() string {
	if e.Healthy {
		return fmt.Sprintf("plugin %s (%s, alloc %s) became healthy", e.PluginID, e.Type, e.AllocID)
	}
	return fmt.Sprintf("plugin %s (%s, alloc %s) became unhealthy: %s", e.PluginID, e.Type, e.AllocID, e.Description)
}

// healthEventFor decides whether the step prev → cur is worth an event: the
// first finished fingerprint always is (someone waits to learn the state),
// afterwards only a change of Healthy. Changes of description alone (a
// different probe error every interval) would only be noise.
func healthEventFor(prev, cur *Fingerprint) (HealthEvent, bool) {
	if cur == nil || !cur.FingerprintDone {
		return HealthEvent{}, false
	}
	if prev != nil && prev.FingerprintDone && prev.Healthy == cur.Healthy {
		return HealthEvent{}, false
	}
	return HealthEvent{
		PluginID:    cur.PluginID,
		Type:        cur.Type,
		AllocID:     cur.AllocID,
		Healthy:     cur.Healthy,
		Description: cur.HealthDescription,
		Time:        cur.LastFingerprint,
	}, true
}
