// Package driver launches task processes and finds them again after the
// agent restarts. There are two drivers: raw_exec (any binary) and go_plugin
// (a plugin launched through HashiCorp go-plugin, gRPC only: an sdk CSI
// plugin by default, or any gRPC go-plugin plugin described by a
// StartRequest.Plugin spec).
//
// # Processes
//
// Every task starts in its own session (setsid), so signals aimed at the
// agent's process group never reach it, and it is a process-group leader,
// so Kill and Signal reach everything it forked. Each task is held by a
// pidfd from the moment it starts: signals to the leader go through the
// pidfd and cannot reach a stranger that reused the pid, and a group signal
// is only sent while the pidfd says the leader is alive.
//
// A Handle records the pid and the process start time (clock ticks since
// boot, /proc/<pid>/stat field 22). Together they name one process for the
// life of the machine. Recover opens a pidfd first and compares the start
// time second, so the process that was checked is the process held; a
// mismatch is ErrPidReused and nothing is signalled.
//
// Exits of tasks the agent started come from wait(2) and carry the exit
// code or signal. Re-adopted tasks are not the agent's children, so their
// exit status goes to their new parent; their exit is noticed by a Watcher,
// one goroutine in epoll_wait over every adopted pidfd (no polling, one
// thread for any number of tasks), and their ExitResult says Unknown.
//
// Kill sends the kill signal to the group, waits the kill timeout, sends
// SIGKILL, and returns once the leader is gone or its context ends: it
// never hangs.
//
// # go-plugin
//
// The go_plugin driver gives go-plugin its own runner (ClientConfig.
// RunnerFunc). The runner owns the plugin's stdout (the handshake) and
// passes its stderr straight to the task's log shipper: go-plugin's stderr
// parser only ever sees an empty stream, because a plugin line such as
// {"@message": 42} panics it (v1.8.0). SkipHostEnv keeps the agent's
// environment out; the plugin gets exactly the task's environment plus
// go-plugin's variables. The socket directory go-plugin creates lives in the
// task's socket directory (and is given to the task's user, who runs the
// plugin); GoPluginSocketOverhead is how much longer the final socket path
// is than that directory.
//
// The address a plugin announces in its handshake is the plugin's word,
// and go-plugin would dial any: the runner's PluginToHost accepts only the
// task's own socket or loopback port, served by a process of the task, and
// every later dial (gRPC's, a reattach's) checks again (handshake.go).
//
// Launching and re-attaching both end with an identity RPC (CSI
// GetPluginInfo by default; grpc.health.v1 Check("plugin") for a plugin
// with a PluginSpec, whose handshake and dispensed name come from the job;
// go-plugin's Control.Ping for a net/rpc plugin, which only a job's
// handshake block allows) before the task is trusted. The spec is not saved
// with the handle: the task runner derives it from the job for Start and
// Recover alike. A plugin that needs TLS is refused with ErrNotPlainGRPC,
// explained from its handshake line, which the runner records.
//
// Kill stops a plugin with a handshake block the go-plugin way first
// (GRPCController.Shutdown, Control.Quit), since go-plugin's Serve ignores
// SIGINT; then kill_signal, SIGKILL and the cgroup as for every task. The
// agent's gRPC clients open no GRPCBroker stream (broker.go): go-plugin's
// plugin side closes its broker when the first such stream ends. The reattach record
// is a plain struct (go-plugin's holds a net.Addr interface); Recover
// passes go-plugin the plugin set of the saved protocol version, since
// reattach skips negotiation, and a watcher-backed AttachedRunner instead
// of go-plugin's once-a-second kill(pid, 0) poll. A process whose start time
// matches but which fails the identity RPC is killed: it is ours but
// unusable, and a restart must not run next to it.
//
// Detach lets go of a task without stopping it, as a dying agent would:
// pidfds, connections and our end of the plugin's stdout are closed.
package driver
