// Package taskrunner runs allocations: an AllocRunner per allocation, a
// TaskRunner per task, each task's life built from hooks around a driver
// (package driver), and every step recorded in the state store.
//
// # Life of a task
//
// Before each launch the prestart hooks run in order: validate (driver and
// config exist; errors are Fatal), user (who the task runs as: its
// `user`, its allocation's dynamic uid for an exec task that names none,
// else nobody or the agent's user; a user of its own also gets the
// allocation's group), task_dir (Nomad's layout under
// <data_dir>/alloc/<alloc-id>/ with the owners and modes of package
// allocdir, made through package beneath: a link the task left where a
// directory belongs fails it), env (the environment from nothing:
// PATH=DefaultPath, HOME, the NOMAD_* variables and NOMAD_META_*, then the
// job's env with ${...} interpolated), cgroup (the launch's control group
// with the task's resources), plugin_log (go_plugin tasks only:
// PLUGINHOST_LOG_LEVEL unless the job set it, PLUGINHOST_LOG_FILE always,
// the file made for the plugin's user; its Poststart follows that file
// into the agent's log until the task exits or the runner ends, see
// package pluginlog), socket_dir (the task's 0700 socket directory,
// cleared of sockets nobody listens on), logmon (a log shipper process,
// package logmon, spawned but not waited for, handed the log directory as
// a descriptor), then any Config.ExtraHooks
// (the CSI supervisor, which adds CSI_ENDPOINT to the env in Prestart and
// probes in Poststart). Args, command and work_dir are interpolated after
// all of them. Then the driver starts the task, the handle (pid, start
// time, reattach record, shipper pid) is stored, the shipper's readiness
// is checked (one that failed restarts the task: its output has no
// reader), and the poststart hooks run. A hook may fail the task or ask
// for a restart through its HookRequest. A task re-adopted after an agent
// restart runs no prestart hook, but its environment is built again by the
// env hook's code before its poststart hooks: a plugin's endpoint comes
// from its job, never from /proc/<pid>/environ, which the task can rewrite.
//
// # Allocation hooks
//
// Config.AllocHooks adds hooks of a whole allocation (allochooks.go; the
// agent's volume hook is one). A prerun hook runs once per runner, in a
// goroutine of its own started by Run; every launch of every task waits for
// it after the task's own prestart hooks (so the task's directories and log
// shipper are made while, say, a volume's CSI calls are in flight) and
// before the driver starts the task; its error fails the tasks as
// unrecoverable. Its output is per-task bind mounts (AllocHookRequest.Mounts),
// which the driver makes in the task's own mount namespace (package
// nsexec). Restored tasks are re-adopted without waiting for it. A postrun
// hook runs once every task is dead for good, never on Shutdown.
//
// # What is written, and when
//
// A commit costs two fdatasyncs whatever it holds, so the runner writes
// in as few commits as durability allows (state.DB.Update; record.go):
//
//   - NewAllocRunner: the allocation and every task's Received event and
//     pending state, one commit, before the allocation ID is returned.
//   - Task Setup is informational: it is announced at once and stored with
//     the task's next write. A kill -9 may lose it, never anything a
//     restarted agent needs.
//   - After a launch: the handle, the running state, the Started event and
//     the allocation's derived client status, one commit, made before
//     Started is announced (OnEvent) or any poststart hook talks to the
//     task: nothing outside the agent may see a task the store could still
//     forget. So a launch is two commits where it was eight.
//   - Every other change (an event, a state, a handle) is one commit,
//     taking along any unsaved informational event; a task's writes are
//     serialised (writeMu) so the stored order is the emitted order.
//
// Between the fork and that commit the task runs unrecorded; no write
// order can close that window. The restore side does: a restored task that
// has no handle and is not dead first kills any process whose environment
// carries its NOMAD_ALLOC_ID and NOMAD_TASK_NAME (and its process group),
// so an agent killed mid-launch never leaves two copies (orphans.go).
//
// When the process exits: Terminated (exit code or signal), exited hooks,
// and the restart policy, as Nomad's client applies it: attempts within
// interval, each after delay plus up to 25% jitter (the same every attempt),
// then mode fail (the task fails) or delay (wait for the interval to end).
// A successful batch task completes. Fatal errors (bad config, checksum mismatch) fail at once.
//
// # Stop versus shutdown
//
// Stop (a job or allocation stopped by the user) kills every task with its
// kill_signal, then SIGKILL after kill_timeout, runs the stop hooks and
// marks the tasks dead. Shutdown (the agent exiting on SIGINT/SIGTERM, or a
// test simulating kill -9) lets go of everything and leaves tasks running
// with their handles in the store.
//
// # Restore
//
// RestoreAllocRunner plus Run re-adopt each stored handle through the
// driver's Recover: the pid must still run with the recorded start time,
// and a go_plugin task must answer its identity RPC. A task that died
// while the agent was down gets a Terminated event saying its exit code is
// unknowable (and, if its pid now belongs to someone else, that the
// stranger was not signalled); then its restart policy applies. No task is
// started while a live copy exists, recorded or not (see above). A task whose state was dead
// stays dead; an allocation whose stop was interrupted finishes stopping.
//
// # Sockets
//
// Unix socket paths are limited to 107 bytes. SocketDir places an
// allocation's socket directory at <data_dir>/sockets/<alloc-id> when that
// leaves SocketBudget bytes for go-plugin's names, else under a short root
// derived from a hash of the data dir (/run/pluginhost/<8 hex> or
// $TMPDIR/pluginhost-<8 hex>), the same after every restart; failing that,
// it is an error naming the path and the limit, never a dial timeout later.
//
// # Concurrency
//
// Each TaskRunner has one goroutine (run), started by AllocRunner.Run and
// ended by task death, Stop or Shutdown; AllocRunner.Done closes when all
// have returned. Snapshots (State) are copies. The OnEvent callback is
// called synchronously from task goroutines.
package taskrunner
