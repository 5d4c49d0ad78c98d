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
// # Jobs: durable desired state, one reconciler
//
// A job is a record in the state store (state.Job): the version that should
// run, whether it is stopped or to be purged, and the last versions' specs.
// Every allocation stores the job version it runs. Changing a job is two
// steps, and only the first happens in the request:
//
//  1. record: submit (jobs.go) commits the new version and every allocation
//     of it in one transaction and starts their runners; StopJob commits the
//     stop (and purge) flag. Nothing is ever started that the store could
//     forget, and after a crash a submission is there whole or not at all.
//  2. reconcile: reconcileJob (reconcile_jobs.go) runs on a
//     internal/reconcile queue keyed by job ID. It reads the record and
//     compares it with the allocations: slots of the current version without
//     an allocation get one; earlier versions' allocations stop once the
//     current ones are healthy (every task running for the group's update
//     min_healthy_time, CSI plugin tasks' plugins healthy; update_health.go),
//     so a CSI plugin stays available through its own update; a version
//     that fails or misses healthy_deadline is stopped instead, the earlier
//     one keeps running, the outcome is recorded on the job (and with
//     auto_revert the last stable version is submitted again); a stopped job's allocations stop; a purged job is forgotten
//     once they have. Stops run in the background, a pass never blocks on a
//     kill_timeout. Task events and finished allocations add the job to the
//     queue again.
//
// At every start, after the allocations are restored, every job is added to
// the queue, so whatever a killed agent left half done (an update, a stop, a
// purge) is finished by the same code that does it normally. jobMu keeps a
// pass from seeing a version that submit has recorded but whose runners it
// has not started yet.
//
// # Volumes and claims
//
// Volume requests are parsed here (volumespec) and handed to
// csi.VolumeManager, the same record-then-reconcile mechanism on the
// volume's key. Claims (volume_hook.go): submit checks every claim of the
// new version (csi.VolumeManager.CheckClaims, the job's own older
// allocations not counting) before it records anything, and records the
// claims of the allocations it creates in the very transaction that records
// them (csi.ClaimsTx over state.Tx, with the volume records' locks taken
// first), under jobMu, so the next submission sees them and a crash leaves
// both or neither. Each allocation with volumes gets the volume hook: its
// prerun makes its claims (idempotently: a claim submit could not record,
// the volume being removed meanwhile, fails here with the reason), waits, bounded by
// csi.volume_mount_timeout, until each is published, and hands every task
// its bind mounts; its postrun releases the claims once every task is dead.
// The state store answers csi.AllocSource (AllocEnded), so the reconciler
// releases the claims of allocations that ended or are gone on its own.
// When a new version writes to a volume that allows one writer,
// reconcileJob stops the old allocations at once instead of after the new
// ones are healthy: the new ones cannot mount before the old release.
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
