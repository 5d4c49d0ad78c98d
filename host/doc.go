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
// copy), starts the HTTP API, and only then reports itself ready: Ready turns
// true once the CSI manager has finished a first fingerprint of every plugin
// the registry knew at start, successful or not. Nothing asking for a plugin
// after a restart sees "plugin not found" merely because the agent was quicker
// than its plugins (Nomad #7200, #13028).
//
// # Jobs
//
// A job exists while it has allocations; there is no separate job record.
// Every allocation stores the job it was started with, so a restored agent
// knows its jobs without re-reading any file. Submitting a job that is
// unchanged does nothing. Submitting a changed job starts new allocations and
// stops the old ones only once the new ones are running (or have failed), so a
// CSI plugin stays available through its own update: the new allocation
// registers, becomes the active instance, and the old one deregisters after.
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
// One broker fans task, allocation, registry and plugin-health events out to
// API subscribers. Publishing never blocks: a subscriber whose buffer is full
// is dropped (its stream ends) rather than slowing the agent down.
package host
