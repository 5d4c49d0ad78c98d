// Package plugins follows pluginhost's CSI plugins: the Manager keeps one
// fingerprint of every active allocation of every CSI plugin in the plugin
// registry (package dynamic) and hands out the clients (package csi) the
// volume code calls them with. It imports csi, dynamic, the CSI spec, gRPC
// and hclog; csi/volumes builds on it.
//
// # Fingerprints and instance managers
//
// An instance manager fingerprints one allocation of one type
// (csi-controller or csi-node; a monolith is registered as both and gets
// two). GetPluginInfo, GetPluginCapabilities and, for nodes, NodeGetInfo
// describe the driver binary and are asked until they succeed once; Probe
// and Controller/NodeGetCapabilities are the health check, asked at once
// when the instance starts, then every FingerprintInterval. The RPCs of one
// fingerprint go out together (they do not depend on each other) and the
// answers are judged in the order Probe, the once-only part, the service's
// capabilities, so a first fingerprint costs one round trip. A fingerprint
// never fails: its result, Fingerprint, is healthy or unhealthy with the
// reason in HealthDescription. Probe without `ready` means ready;
// ready=false means "starting" (unhealthy, not an error). Capability lists
// are rendered as sorted, deduplicated names (package csi's
// PluginCapabilityNames and friends); values the spec reserved after
// removing them (VOLUME_CONDITION) keep their spec name, numbers nobody
// names become "UNKNOWN(n)", entries with nil fields are skipped, so odd
// real-world drivers fingerprint fine.
//
// Each instance manager owns one goroutine. Stopping it cancels a
// fingerprint in flight, waits for the goroutine, records a final
// unhealthy fingerprint with the reason and closes the client; a stopped
// instance never publishes again, so the final state stays final.
//
// # Manager
//
// The Manager holds one slot per (type, plugin name), filled by the
// registry's active allocation. Start uses Registry.Watch, which returns the
// active allocations and a subscription atomically, so restored plugins are
// fingerprinted at start and no change falls between the listing and the
// events. One goroutine then applies events in registry order:
// Registered/Activated/Updated with Active set start a new instance in the
// slot (fingerprinted at once, not at the next interval: Nomad users waited
// up to 30s, #7296) and stop the one it displaces; Deregistered of the
// slot's allocation stops and removes it. Nothing polls the registry.
//
// WaitReady takes the registry's active allocations at the time of the call
// and waits, on a broadcast channel closed at every state change, until each
// has finished its first fingerprint (healthy or not) or is no longer active.
// The agent uses it to report ready after a restart (Nomad #7200, #13028).
//
// OnHealthChange reports an allocation's first fingerprint, every flip of
// its health, and the final "agent shutting down" at Shutdown; a displaced
// or deregistered allocation is not reported, as its supervisor already
// says so. The callback runs with no manager lock held.
//
// Lock order: Manager.mu, then an instance's mu; an instance never calls out
// (callbacks, broadcasts) with its own lock held, and instances are stopped
// outside Manager.mu, so stopping never waits on a goroutine that needs a
// lock the stopper holds.
//
// Manager.Client hands the volume code the client of a plugin's active
// allocation; the manager owns it and closes it when the allocation goes.
// Clients are shared per socket (clientpool.go: a monolith's controller and
// node instances use one connection), and a connection the CSI supervisor
// lends (Lend) is used instead of dialing.
//
// Shutdown stops the event goroutine and every instance, and leaves the
// final fingerprints readable through Plugins.
package plugins
