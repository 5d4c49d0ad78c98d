// Package host is the pluginhost agent: it wires the state store, the plugin
// registry, the CSI manager, the allocation runners and the HTTP API into one
// process, and implements api.Backend on top of them.
//
// # Start-up order
//
// NewAgent opens the bbolt state file (failing fast if another agent holds
// it), restores the dynamic registry from it and starts the CSI manager, so
// every plugin that was registered before a restart is fingerprinted through
// its old socket at once. Run then restores every stored allocation (the task
// runners re-adopt live tasks by pid and start time, never launching a second
// copy), starts the HTTP API, and only then reports itself ready, which it
// does once the CSI manager has finished a first fingerprint of every plugin
// the registry knew at start, successful or not. Nothing asking for a plugin
// after a restart sees "plugin not found" merely because the agent was quicker
// than its plugins (Nomad #7200, #13028).
//
// # Jobs
//
// Package jobs owns the allocation runners and decides which run: the job
// reconciler (a queue keyed by job ID; every job is reconciled at start),
// the rollout judge (health-gated and bounded: at most the last healthy
// version and the newest run) and the collector. This package hands it
// the state store, a runner factory (factory.go: a submission's version,
// allocations and volume claims in one commit) and callbacks that turn its
// events into API events.
//
// # Volumes and claims
//
// Volume requests are parsed here (volumespec) and handed to
// volumes.VolumeManager (csi/volumes), the same record-then-reconcile
// mechanism on the volume's key. Claims (package claimhook): a submission checks every claim
// of the new version (the job's own older allocations not counting)
// before it records anything, and records the claims of the allocations
// it creates in the very transaction that records them, so the next
// submission sees them and a crash leaves both or neither. Each
// allocation with volumes gets claimhook.Hook, handed the volume manager,
// the mount timeout and a logger: its prerun makes its claims
// (idempotently), waits until each is published and hands every task its
// bind mounts; its postrun releases the claims once every task is dead.
// The state store answers volumes.AllocSource, so the volume reconciler
// releases the claims of allocations that ended or are gone on its own.
//
// # Shutdown
//
// Run returns when its context ends (SIGINT or SIGTERM). It stops the API,
// records a final unhealthy state for every plugin, and lets go of the
// allocation runners without touching their tasks: plugins keep running and
// the next agent adopts them. `pluginhost job stop` is how tasks are stopped.
//
// # Events
//
// Task, allocation, job, registry, plugin-health and volume events reach
// API subscribers through events.Broker; task events come from the runners
// through events.TaskQueue. Package events says why the agent has three
// pub/sub mechanisms (dynamic's feed being the third).
package host
