// Package csi is pluginhost's side of the Container Storage Interface. The
// CSI code does four jobs in three packages, bottom up:
//
//   - csi (this package): the client of one plugin socket, with its
//     timeouts and retries (Client, RetryPolicy, SocketPath), and the
//     names of the spec's capabilities. It knows nothing of the registry,
//     volumes or the agent.
//   - csi/plugins: which plugins there are and what they can do. Its
//     Manager follows the plugin registry (package dynamic) and keeps one
//     fingerprinting instance manager per active allocation; it hands out
//     their clients.
//   - csi/volumes: the volume reconciler (create, register, expand, delete
//     and snapshot volumes through a durable queue) and claims, an
//     allocation's use of a volume (ControllerPublish, NodeStage,
//     NodePublish and back). Claims live inside the volume's record and
//     move in the volume's reconcile pass, one CSI call per volume at a
//     time, so they share the package: the claim*.go files are claims,
//     volume*.go and volumes.go the rest.
//
// Imports run one way, csi/volumes → csi/plugins → csi, so each layer can
// be used and tested without the ones above it, and none of them imports
// the agent (host). csi imports dynamic (for the socket path limit), the CSI
// spec, gRPC and hclog; csi/plugins adds the registry's types; csi/volumes
// adds internal/reconcile, the queue the agent's jobs use too. What the
// upper layers need from the agent they declare as interfaces (the
// registry, the volume store, the transaction claims commit in, whether an
// allocation ended), and the agent implements them: host/state stores
// volumes in bbolt. csi/internal/csitest holds the fake plugin the three
// packages' tests share.
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
package csi
