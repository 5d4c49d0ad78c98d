// Package supervisor is the plugin supervisor: the task hook that turns a
// task with a csi_plugin block into a registered, health-checked CSI plugin,
// and a go_plugin task whose config declares a plugin of another type (a
// `plugin` block) into a registered, health-checked plugin of that type.
// Both go through the same supervision; only the questions differ (see
// "Plugins that are not CSI" below).
// The agent installs it with
//
//	hooks, err := supervisor.NewHook(supervisor.Config{Registry: reg, MountRoot: dataDir + "/csi"})
//	runnerCfg.ExtraHooks = hooks
//
// and every task with a csi_plugin block gets its own supervisor hook, which
// lives as long as the task runner, across every launch of the task.
//
// # Life of a plugin
//
// Prestart (before every launch) checks the csi_plugin block (a bad id or
// type is taskrunner.Fatal), creates the plugin's mount root
// <MountRoot>/<type>/<id> and, for raw_exec tasks, sets
// CSI_ENDPOINT=unix://<task socket dir>/csi.sock unless the job set it
// (Nomad #12050); the task socket dir is the task's own,
// <alloc socket dir>/t<index> (taskrunner.TaskSocketDir), so two plugin
// tasks of one group never share a socket. The runner interpolates args after all prestart hooks, so
// `--endpoint=${CSI_ENDPOINT}` works for drivers that ignore the environment.
// go_plugin tasks get no CSI_ENDPOINT: the sdk serves the CSI services on the
// go-plugin socket (driver.Handle.SocketPath), and that socket is what the
// supervisor probes and registers.
//
// A go_plugin task's supervision borrows the driver's go-plugin gRPC
// connection (driver.PluginTask.Dispensed) instead of dialing the socket
// again: the handshake proved the socket live, so step 1 below is skipped,
// and every plugin costs one connection instead of two. The driver's
// identity check asked GetPluginInfo and Probe moments before
// (driver.CSIIdentity); if that said ready, step 2 takes its answers
// instead of asking again. The supervision lends the connection to the CSI
// manager (Config.Conns) before it registers, so the fingerprint the
// registration starts needs no dial either.
//
// Poststart starts one supervision goroutine for the launch and returns at
// once. The runner calls poststart hooks on its own goroutine before it
// starts watching the task, so a Poststart that waited health_timeout would
// leave an exit, a stop or a restart request unnoticed all that time. The
// supervision:
//
//  1. waits for the socket: if it is not there yet, an inotify watch on its
//     directory wakes it on the plugin's bind(2), so the first Probe follows
//     within the kernel's event latency, with no sleep or poll. The event
//     comes at bind(2), a moment before listen(2), so a plain dial retried
//     every millisecond or two bridges that gap: a refused gRPC dial would
//     have put the client in its reconnect backoff;
//  2. probes with a doubling backoff (ReadyBackoffMin to ReadyBackoffMax;
//     Nomad waits a flat 5 s) until Probe says ready and GetPluginInfo
//     answers. ready=false is "starting" and not reported; a Probe error is
//     reported once as "Plugin not healthy: <error>" ("Plugin became
//     unhealthy" is kept for a plugin that was healthy in this launch);
//  3. when health_timeout runs out first, asks the runner for a restart
//     (counted against the restart policy) with the reason "... health_timeout
//     30s elapsed: <last error>" (Nomad #25307);
//  4. registers the allocation in the dynamic registry: csi-node and/or
//     csi-controller by csi_plugin type, Name = csi_plugin id, Version =
//     vendor_version, the socket, and Options (Provider, ProviderVersion,
//     MountDir, StagePublishBaseDir). A monolith's node and controller
//     registrations are one Registry.RegisterAll: one commit, both or
//     neither. Then it emits "Plugin became healthy";
//  5. heartbeats every ProbeInterval. Health changes become task events; as
//     in Nomad they do not restart the task or deregister it: the CSI manager
//     fingerprints health on its own and decides what is usable.
//
// Exited (the process ended, whatever the reason) and Stop (stopped for
// good) cancel the supervision, wait for its goroutine, then deregister this
// allocation's registrations: every Deregister names the allocation ID, so
// another allocation of the same plugin (a rolling update) is never touched,
// and the registry hands "active" back to it. Waiting first guarantees that
// no registration lands after the deregistration.
//
// # Agent restarts
//
// Shutdown runs no hooks: the runner's context ends, which ends the
// supervision without deregistering, and the registration stays in the
// store. The next agent restores the registry from the store before any
// task runs; the runner re-adopts the task and calls Poststart with
// Restored set. The supervision works out the socket (go_plugin: the
// recorded one; raw_exec: the CSI_ENDPOINT in /proc/<pid>/environ, since the
// runner does not rebuild the environment of a re-adopted task). If the
// restored registry holds every registration of the allocation at that
// socket, it skips steps 1-4: one Probe sets the health (so the events show
// "Plugin became healthy" again once it answers), then the heartbeat. After
// an agent restart with a hundred plugins that is a hundred RPCs, not a
// hundred connections and socket checks and two hundred RPCs, while the CSI
// manager fingerprints the same plugins. A registration missing from the
// store (the agent died between launch and registration) takes the full
// path. A plugin that died while the agent was
// down reaches Exited through the runner's restore path, which removes the
// restored registration before any relaunch registers anew.
//
// # Invariants
//
//   - At most one supervision per task at a time; every one is stopped (and
//     waited for) by Exited, Stop, the next Prestart/Poststart, or the runner's
//     context.
//   - The supervision does not ask for a restart once its context ended or
//     its task exited: the runner keeps one pending request, which would
//     otherwise kill the next launch. (A task that exits between that check
//     and the request can still leave one behind; see the runner.)
//   - Only the runner's goroutine calls the hook; the supervision reads nothing
//     of the HookRequest (which the runner rewrites before each launch) but
//     Emit and Restart, captured at Poststart.
//   - Closing an inotify descriptor waits for a kernel SRCU grace period
//     (10-20 ms measured); it happens in the background and the supervision
//     waits for it only when it ends.
//
// # Plugins that are not CSI
//
// A generic plugin's supervision is the same life with other questions
// (checker.go): readiness and heartbeat are grpc.health.v1 Check("plugin")
// over the driver's go-plugin connection (every go-plugin gRPC server
// answers it; SERVING is healthy), or for a net/rpc plugin go-plugin's
// Control.Ping over the driver's multiplexed connection, and the driver's identity check, which
// is that same call, stands in for the first probe at launch and after a
// re-attach. It registers one registration, under the job's plugin type
// and name, with the go-plugin socket and no options. There are no mount
// dirs and no CSI_ENDPOINT, and its connection is not lent to the CSI
// manager. Unlike a CSI plugin, which the CSI manager fingerprints on its
// own, nobody else watches it: a heartbeat that has failed for longer than
// its health_timeout asks the runner for a restart. Events, restarts at
// start-up, deregistration and agent restarts are as above.
//
// Socket paths need no check here: the runner's socket directory leaves
// room for csi.sock and go-plugin's names within sun_path (falling back to a
// short root for a long data_dir), a CSI_ENDPOINT the task sets is checked in
// Prestart (csi.SocketPath, a fatal error naming the 107-byte limit), and the
// registry refuses longer paths.
package supervisor
