// Package sdk is what a pluginhost plugin author imports. A plugin is one
// binary with one entry point, Serve (or Main), and it runs in two modes:
//
//   - Launched by pluginhost it speaks HashiCorp go-plugin over gRPC and serves
//     the CSI Identity/Controller/Node services, plus anything Config.Register
//     adds, on go-plugin's unix socket.
//   - Launched any other way (Nomad raw_exec, a Kubernetes pod, a terminal) it
//     is an ordinary CSI driver listening on --endpoint or $CSI_ENDPOINT.
//
// The author of a CSI plugin writes csi.IdentityServer (and optionally
// Controller/Node servers), puts them in Config.CSI as sdkcsi.Services, and
// calls Main; nothing in the
// plugin depends on which mode it runs in. sdk/sdktest starts a plugin for
// tests in either mode.
//
// A plugin of another type leaves Config.CSI nil, names the types it
// provides in Config.Types and registers its gRPC services in
// Config.Register; it gets the same two modes, signal handling, stdio and
// log file. Each type is an entry of its go-plugin plugin set (a ConnPlugin,
// whose dispensed value is the *grpc.ClientConn); health is go-plugin's
// grpc.health.v1 service "plugin" in both modes. The job that runs it under
// pluginhost says which type and name it is registered as. A host that does
// not interpret a plugin's services uses HostConnPlugins.
//
// # The launch contract
//
// This is what pluginhost's go_plugin driver relies on; the constants live in
// protocol.go so that host and plugin read them from one place.
//
// Environment set by the host:
//
//	PLUGINHOST_PLUGIN=b3f1c0e2-csi-plugin-7d4a9e61   go-plugin's handshake cookie (MagicCookieKey/Value).
//	                                                  Its presence selects plugin mode.
//	PLUGIN_PROTOCOL_VERSIONS=1[,2...]                 versions the host speaks; the plugin picks the
//	                                                  newest one it also speaks.
//	PLUGIN_UNIX_SOCKET_DIR=<alloc socket dir>         directory the agent chose for this allocation; the
//	                                                  plugin creates its socket, with a random name,
//	                                                  inside it. The whole path must fit in 107 bytes.
//	PLUGINHOST_LOG_LEVEL=trace|debug|info|warn|error  level of the plugin's logger: the agent's log_level
//	                                                  unless the job's env sets it (default info).
//	PLUGINHOST_LOG_FILE=<alloc dir>/alloc/logs/<task>.plugin.log
//	                                                  file the plugin appends its JSON log lines to; the
//	                                                  agent follows it. Always the host's choice: a job's
//	                                                  env cannot move it.
//
// In standalone mode only CSI_ENDPOINT=unix:///path/csi.sock (or --endpoint,
// which wins) matters; "unix:/path" and a bare path are accepted too.
//
// go-plugin's AutoMTLS (PLUGIN_CLIENT_CERT) and broker multiplexing
// (PLUGIN_MULTIPLEX_GRPC) are refused: the plugin unsets them before serving,
// because pluginhost's CSI code dials the socket with a plain gRPC client and
// TLS or yamux on the socket would lock it out. A host that asks for them gets
// a handshake error from go-plugin, not a silently unreachable plugin.
//
// Handshake: the first and only line the plugin writes to stdout in plugin
// mode is go-plugin's
//
//	1|<negotiated version>|unix|<socket path>|grpc|
//
// (core protocol 1, no server certificate). Nothing may be printed to stdout
// before it, which is why NewLogger never writes to stdout.
//
// The host starts the plugin with setsid (its own session and process group),
// so signals aimed at the agent's process group, a terminal hangup among them,
// do not reach it.
//
// # Versions
//
// Host and plugin use go-plugin's VersionedPlugins. HostPlugins lists every
// version the host speaks; the plugin serves the newest version offered that
// it also speaks, so a newer pluginhost keeps driving older plugins. On
// reattach go-plugin does no negotiation and dispenses only from
// ClientConfig.Plugins (go-plugin #310): the host saves the negotiated version
// with its reattach record and passes HostPluginSet(version). A new protocol
// version is added by a new entry in both maps, never by changing version 1.
//
// # When the host dies
//
// The plugin keeps serving: only the host's Shutdown RPC (go-plugin's Kill),
// SIGTERM or SIGKILL stop it. Three things would otherwise kill or wedge it:
//
//   - SIGPIPE. Its stdout and stderr are pipes to a dead process; Go dies on
//     the first write to a broken fd 1 or 2. Serve ignores SIGPIPE.
//   - Blocking stdio. go-plugin's own Serve swaps os.Stdout and os.Stderr for
//     pipes drained only while a host streams stdio, so the 64 KiB-th byte
//     blocks the plugin. This package runs go-plugin's server without that
//     swap and instead replaces os.Stdout and os.Stderr with non-blocking
//     writers on their own file descriptions: a write to a full pipe fails
//     with EAGAIN, to an orphaned one with EPIPE; it never waits. The cost is
//     that output beyond what the pipe holds is dropped when the reader does
//     not keep up; anything that must survive belongs in the log.
//   - Lost logs. NewLogger appends every line to PLUGINHOST_LOG_FILE and
//     writes it to stderr best-effort, so the file has everything even while
//     no host is reading stderr.
//
// The non-blocking writers need Linux (a pipe reopened through /proc gets a
// file description of its own). On macOS and Windows stdio stays as it is:
// a write to an orphaned pipe still fails at once (EPIPE, with SIGPIPE
// ignored on macOS; Windows has no SIGPIPE), but one to a full pipe whose
// reader lives and does not read waits, as under go-plugin's own Serve.
// Windows has no sessions either: a plugin under a host there ignores
// Ctrl-C and stops on SIGTERM (the console's close, logoff and shutdown
// events) or the host's shutdown. Building the sdk with the "portable" tag
// selects the macOS and Windows stdio on Linux, for tests.
//
// Consequence for the host: go-plugin's GRPCStdio stream (ClientConfig
// SyncStdout/SyncStderr) carries nothing from an sdk plugin. Its output is on
// the process's real stdout and stderr, which pluginhost hands to the task's
// log shipper (alloc/logs/<task>.stdout.N and .stderr.N); the agent reads the
// plugin's log lines from PLUGINHOST_LOG_FILE instead (see Logging).
//
// SIGTERM stops a plugin gracefully in both modes: GracefulStop, then Stop
// after Config.StopTimeout. SIGINT does the same standalone, and in plugin
// mode when the plugin leads its own session, as every pluginhost task does:
// there it can only be the job's kill_signal (Nomad's default is SIGINT). A
// plugin sharing its host's session ignores SIGINT, as go-plugin intends,
// since a Ctrl-C in the host's terminal would reach it too.
// Long-lived infrastructure streams (go-plugin's stdio and broker, health
// Watch, reflection) are ended as the stop begins, so that a live host does
// not hold every stop for the whole timeout; the plugin's own calls are the
// ones given time to finish. A
// standalone plugin removes a stale socket at its endpoint before listening
// (never a live one, never a non-socket) and its own socket on exit; in plugin
// mode go-plugin removes its socket on a clean stop, and a SIGKILLed plugin's
// socket is left for the host to clear with the allocation's socket dir.
//
// # Logging
//
// NewLogger returns an hclog.Logger writing JSON lines with @level, @message,
// @module and @timestamp. pluginhost follows PLUGINHOST_LOG_FILE (every
// quarter second, and once more when the task exits or stops) and logs each
// line in the agent's log at its level, under the logger "plugin.<@module>"
// with alloc_id, task and the line's other keys (@timestamp is dropped; keys
// named alloc_id or task become plugin_alloc_id and plugin_task). Any line is
// accepted: one that is not a JSON object is logged whole at info, a
// @message that is not a string is logged as its JSON text, a @level that is
// not a level means info and is kept as a key, control characters are
// escaped, lines are cut at 64 KiB and only the first 64 other keys are kept.
// The same lines also go to stderr, which the agent does not parse: they end
// up in the task's stderr log files. After an agent restart a re-adopted
// plugin's file is followed from its end at that moment: lines written while
// no agent ran are in the file (and the stderr log) but not in the agent's
// log, and no line is logged twice. The file is never rotated; it goes with
// the allocation.
//
// # Invariants
//
//   - Both modes serve the same services: Identity (a CSI plugin's), Controller
//     and Node when set, Register's services, grpc.health.v1.Health ("plugin" is
//     SERVING) and gRPC reflection.
//   - sdk never imports host; host imports sdk only for this contract.
//   - sdk never imports the CSI spec: the CSI services live in sdk/sdkcsi,
//     so a plugin of another type does not link it (TestNonCSIPluginDeps).
//   - The only process-wide state Serve touches is what a plugin process owns
//     anyway: signal dispositions, os.Stdout/os.Stderr in plugin mode, and the
//     two go-plugin variables above. ServeStandalone touches none of it, so it
//     is safe in a test process.
package sdk
