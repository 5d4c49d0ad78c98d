// Package volumes is pluginhost's volume reconciler and its claims: the
// durable records of CSI volumes, the work that makes each plugin's
// volumes what the records say, and allocations' claims on them. It
// imports csi (the client), csi/plugins (which plugin allocation to call,
// and what it can do), dynamic and internal/reconcile; the store it keeps
// records in is an interface, VolumeStore, that host/state implements.
//
// Claims share the package with volumes because a claim is part of its
// volume's record and every CSI call for a volume, claim steps included,
// runs in that volume's reconcile pass. The files say which is which:
// volume.go, volume_convert.go, volume_snapshots.go and volumes.go are the
// volumes; claim.go, claim_steps.go, claims.go, claims_reconcile.go and
// claims_tx.go the claims, and claims_reconcile.go also holds reconcile,
// the pass over one volume that runs both; recordlocks.go serves both.
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
package volumes
