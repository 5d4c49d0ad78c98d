// Package csi is pluginhost's side of the Container Storage Interface: a
// client for one plugin socket, the fingerprinting of plugin allocations,
// and the Manager that keeps one fingerprinter per active allocation by
// following the plugin registry (package dynamic). It imports only dynamic,
// the CSI spec, gRPC and hclog; the agent (host) builds on it.
//
// # Client
//
// Client speaks the spec's Identity, Controller and Node services over a
// unix socket it dials itself (so any path works, whatever characters it
// holds). pluginhost's sdk plugins serve these services directly on their
// go-plugin socket, and standalone drivers on CSI_ENDPOINT, so one client
// serves both. The wrapper is thin on purpose: spec request in, spec
// response out. What it adds:
//
//   - Timeouts. The caller's context bounds the whole call; a context
//     without a deadline gets ClientConfig.CallTimeout. Each attempt also
//     gets RetryPolicy.AttemptTimeout, so a hung attempt becomes a
//     retryable DEADLINE_EXCEEDED instead of eating the caller's budget.
//   - Retries, only for ABORTED, UNAVAILABLE and DEADLINE_EXCEEDED (see
//     Retryable), with capped exponential backoff and equal jitter. The
//     doubling stops at the cap, so no attempt number can overflow the
//     wait (swarmkit's `100ms << attempt` went negative at attempt 37).
//     A call gives up early when its remaining budget cannot cover the next
//     wait. Every CSI RPC is idempotent by the spec, which is what makes
//     retrying mutating ones safe.
//   - Errors wrapped with method, socket and attempt count; the gRPC status
//     stays reachable (status.Code, errors.As), and a cancelled caller's
//     context error stays reachable with errors.Is.
//   - The socket path checked against sun_path (107 bytes on Linux) up
//     front, with an error naming the path and the limit: too long a path
//     otherwise shows up only as dial timeouts (Nomad #24295).
//   - A short gRPC reconnect backoff (at most 1s instead of 2 minutes), so a
//     plugin restarted on the same socket is reached again within retries.
//
// # Fingerprints and instance managers
//
// An instance manager fingerprints one allocation of one type
// (csi-controller or csi-node; a monolith is registered as both and gets
// two). GetPluginInfo, GetPluginCapabilities and, for nodes, NodeGetInfo
// describe the driver binary and are asked until they succeed once; Probe
// and Controller/NodeGetCapabilities are the health check, asked at once
// when the instance starts, then every FingerprintInterval. The RPCs of one fingerprint go out together (they
// do not depend on each other) and the answers are judged in the order
// Probe, the once-only part, the service's capabilities, so a first
// fingerprint costs one round trip. A fingerprint never fails: its result, Fingerprint,
// is healthy or unhealthy with the reason in HealthDescription. Probe
// without `ready` means ready; ready=false means "starting" (unhealthy, not
// an error). Capability lists are rendered as sorted, deduplicated names;
// values the spec reserved after removing them (VOLUME_CONDITION) keep
// their spec name, numbers nobody names become "UNKNOWN(n)", entries with
// nil fields are skipped, so odd real-world drivers fingerprint fine.
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
//
// Shutdown stops the event goroutine and every instance, and leaves the
// final fingerprints readable through Plugins.
//
// # Volumes
//
// A Volume is a durable record in a VolumeStore (host/state keeps them in
// bbolt): the spec as requested, what the plugin answered (external ID,
// capacity, volume context, accessible topology), the desired state
// (present, deleted, deregistered), the progress (pending, ready, failed)
// and the last attempt's outcome. VolumeManager's request methods (Create,
// Register, Delete, Deregister) write the desired state and return; the
// work is done by reconcile, on an internal/reconcile queue keyed by volume
// ID, the same mechanism as the agent's jobs:
//
//   - One step per pass, chosen from the record: DeleteVolume for a volume
//     to delete (NOT_FOUND is done), CreateVolume for a created volume
//     without an external ID (its Name is the idempotency key: a create
//     that reached the plugin before a crash returns the same volume when
//     retried, never a second one), ControllerExpandVolume when the
//     requested capacity grew, ValidateVolumeCapabilities for a registered
//     one. The outcome is recorded before the pass ends, unless a request
//     changed the volume's desired state or capacity while the pass ran:
//     that record stays, with only the plugin's answer (external ID,
//     capacity, context) added, and the next pass acts on it.
//   - Never two CSI calls for one volume at once: the queue runs one pass
//     per key, and one-off calls (CreateSnapshot) take the key's slot with
//     Queue.Exclusive. Different volumes run in parallel, up to Workers
//     (swarmkit has one worker for all, so one slow volume stalls them).
//   - Errors a retry cannot fix (InvalidArgument, AlreadyExists,
//     FailedPrecondition, NotFound, Unimplemented, a missing capability)
//     mark the volume failed with the plugin's message and stop; the rest
//     are retried with jittered exponential backoff whose doubling stops at
//     the cap (swarmkit's `100ms << attempt` overflows). Each RPC has
//     RPCTimeout. A new request resets the attempt count.
//   - A missing or unhealthy controller is waited for, not retried: the
//     pass records what it waits for and ends; PluginChanged, which the
//     agent calls on every plugin health change, queues the plugin's
//     unsettled volumes again.
//   - Start queues every unsettled volume: whatever a killed agent left
//     half done is finished from the record.
//   - Requests and passes never overwrite each other: every
//     read-modify-write of a record holds its volume's lock (recMu; one
//     per volume, so that writes of different volumes share the store's
//     group commits), each request bumps the
//     record's Generation, and a pass records its progress only if the
//     generation it read is still current (the plugin's facts, such as a
//     new external ID, are kept either way). A delete that arrives while a
//     create is in flight therefore deletes what the create made. Claims
//     change without a new generation, so a volume step's outcome takes
//     them (and the ControllerPublish state) from the record as it is when
//     the outcome is written, never from the pass's copy.
//   - A pass reads the record once and hands it down; each claim step
//     works from the record its predecessor wrote (read under the lock).
//     Whatever a request changes after those reads queues the volume
//     again, so reading more often would only cost JSON decodes.
//   - A created volume to delete whose external ID was never recorded (the
//     agent died, or gave up on the answer, after CreateVolume reached the
//     plugin) is asked for again by name (CreateVolume is idempotent) and
//     then deleted, so nothing is left behind at the plugin unknown.
//
// Requests check what the plugin can do when it is known
// (CREATE_DELETE_VOLUME, CLONE_VOLUME; snapshots and listings their own
// capabilities) and refuse with a RequestError naming the field, rather
// than queueing work that must fail.
//
// # Claims
//
// An allocation's use of a volume is a Claim inside the volume's record
// (claim.go), so claims are serialised with the volume's own work and every
// CSI call for a volume runs in that volume's pass, one at a time (no
// unstage racing a publish, Nomad #20424). CheckClaims decides whether
// requests can be granted (the volume exists, offers the mode, the access
// mode allows another writer) without writing; Claim records claims
// idempotently; ClaimsTx records them inside a transaction of the caller's
// (VolumeTx: the agent's allocation records and its volume records share
// one bbolt file, so a new allocation and its claims commit together, one
// fsync pair instead of two), holding the records' locks from BeginClaims
// to End; Release marks an allocation's claims released; the
// reconciler also releases, at every pass and at Start, the claims of
// allocations that AllocSource says ended or are gone.
//
// A claim moves one recorded step at a time (claim_steps.go): pending →
// controller-published (ControllerPublish when a controller can publish;
// the staging and target paths are fixed and recorded here, before any
// node call) → staged (NodeStage with STAGE_UNSTAGE_VOLUME, skipped when
// another claim of the same usage staged it) → published (NodePublish).
// A release unwinds: NodeUnpublish → unpublished; NodeUnstage unless
// another claim may still stand on the staging path → unstaged;
// ControllerUnpublish with the volume's last claim → forgotten. Each state
// is the last step known done; the next step may have reached the plugin
// before a crash, so a release undoes it too (the spec makes every node
// call safe to repeat, and answers OK for what is not there), which is why
// no intent needs recording before a call. Because usage lives in the
// record, a restart never forgets that a staging path is shared (Nomad
// #25813), and a published claim needs no call at all after a restart.
//
// A step's outcome is a fact about the plugin and is recorded whatever
// request came meanwhile; requests change only Desired. Errors a retry
// cannot fix mark the claim Failed, and the allocation waiting for it
// (WaitMounted) fails; the rest retry the volume with backoff. A missing
// plugin is waited for, like a missing controller.
package csi
