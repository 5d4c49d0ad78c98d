// Command mockcsi is a complete CSI plugin written with pluginhost's sdk: a
// volume is a directory, a snapshot a copy of one. It exists to exercise
// pluginhost (and any CO) against a real plugin process, including the
// ways real plugins misbehave.
//
// # Running
//
// The same binary runs under pluginhost (go-plugin, chosen by the sdk when
// the handshake cookie is in the environment) and standalone as an ordinary
// CSI driver on --endpoint or $CSI_ENDPOINT, so it also works under Nomad's
// raw_exec or in a Kubernetes pod. With no flags it picks:
// driver name mockcsi.pluginhost.dev, node ID = hostname, state dir
// $NOMAD_TASK_DIR/mockcsi, else $XDG_STATE_HOME/mockcsi, else
// /tmp/mockcsi-<uid>, a 100 GiB capacity pool and no attach limit
// (--max-volumes-per-node, enforced by ControllerPublishVolume with
// RESOURCE_EXHAUSTED).
//
// # State and idempotency
//
// Everything mockcsi knows lives in its state dir (see store): state.json
// plus one directory per volume and snapshot. state.json is rewritten whole
// on every change (temp file, fsync, rename, fsync dir) and memory changes
// only after the write succeeded, so a kill -9 at any point leaves either
// the old or the new state. A record implies its directory exists: content
// is created before its record and deleted after it, and start-up removes
// directories without a record. Because every request is checked against
// this persisted state (volume and snapshot names, controller publications,
// staging and target records), repeating any mutating RPC is safe, also
// after a restart. Several processes may share a state dir: a plugin
// job's update under pluginhost starts the new allocation before it stops
// the old one, and a state dir on a host path (not $NOMAD_TASK_DIR) is what
// keeps the volumes across updates. Each view and change of state.json
// takes <state>/state.lock and rereads the file when another process
// replaced it; only a process alone on the dir (<state>/lock) removes
// directories without a record. Operations in flight (store.acquire) and
// the call record are per process.
//
// Operations on one volume are serialized without queuing: a second
// operation while one is in flight gets ABORTED, which CSI defines as
// "retry with backoff" (store.acquire).
//
// # Node attach
//
// Stage bind-mounts the volume directory on the staging path; publish
// bind-mounts the staging path on the target path (read-only via remount
// when asked). Where mounting is not permitted, --mount-method=auto (the
// default) falls back to a symlink at the target path pointing at the
// volume's directory, and stage only records the staging; the symlink
// cannot enforce read-only. --mount-method=bind turns the fallback off
// (mount errors are returned), --mount-method=symlink never mounts. Each
// record remembers its method, so unpublish undoes the right thing.
//
// # Capacity
//
// Capacity is accounting: volumes and snapshots draw their size from the
// --capacity pool (OUT_OF_RANGE when it is exhausted), GetCapacity reports
// what is left, and NodeGetVolumeStats reports bytes actually written
// against the volume's capacity. Nothing stops a workload writing more.
//
// # Fault injection
//
// For pluginhost's own tests (flag / environment variable, the flag wins):
//
//	--probe-fail     MOCKCSI_PROBE_FAIL=1         Probe returns FAILED_PRECONDITION
//	--probe-delay    MOCKCSI_PROBE_DELAY=<dur>    Probe answers after <dur>
//	--not-ready-for  MOCKCSI_NOT_READY_FOR=<dur>  Probe says ready=false for <dur> after start
//	--latency        MOCKCSI_LATENCY=<dur>        every RPC is delayed by <dur>
//	--crash-after    MOCKCSI_CRASH_AFTER=<n>      the (n+1)th RPC exits the process (code 75)
//	--exit-at-start  MOCKCSI_EXIT_AT_START=<code> exit with <code> before serving
//	--fail           MOCKCSI_FAIL=<rules>         the first calls of a method fail (below)
//	--delay          MOCKCSI_DELAY=<delays>       a method answers late (below)
//
// MOCKCSI_FAIL is a comma-separated list of Method:N:CODE, for example
// CreateVolume:3:UNAVAILABLE,DeleteVolume:1:INTERNAL. Method is the CSI
// method's name in the spec (CreateVolume, NodeStageVolume, ...); the first
// N calls of it fail with CODE, later ones are served. N is * or -1 for
// every call, which is how a test shows that a non-retryable error
// (CreateVolume:*:INVALID_ARGUMENT) is not retried. CODE is a gRPC code
// name, canonical (FAILED_PRECONDITION) or Go's (FailedPrecondition), in
// any case. The counts are per process. An injected failure happens before
// the handler, so the call did nothing, and its message says it was
// injected. An unknown method or code is a start-up error: a rule that can
// never fire would make a test pass for the wrong reason.
//
// MOCKCSI_DELAY is a comma-separated list of Method:duration, for example
// CreateVolume:2s. The call does its work and commits its state, then waits
// the duration (or until the caller gives up) before answering. Latency
// waits before the work instead. The delay is the window in which a test
// kills the caller: the plugin has created the volume, the caller never
// hears so, and must find out on its retry. An error from the handler
// (ABORTED from the volume's lock, say) is held back too; an injected
// failure is not.
//
// Latency, crash-after, fail and delay apply to every CSI call through one
// unary interceptor that the driver hands the sdk in Config.ServerOptions
// (faults.intercept), so a new RPC gets them without a line of its own.
// Health checks and go-plugin's own services are not CSI calls and are
// neither delayed nor counted. The Probe faults shape Probe's answer, so
// Probe applies them itself.
//
// # Call record
//
// A CO must never have two calls for one volume in flight at once; the
// per-volume lock only answers the second one ABORTED, so mockcsi also
// records what it was sent, for the CO's tests to check (callRecord). An
// interceptor outside the fault one sees every CSI call from its arrival
// (before latency, fail rules and the lock) to its answer (after the
// delay) and, when asked to (--record-calls, MOCKCSI_RECORD_CALLS; it
// costs a file write per call), keeps in <state dir>/calls.json:
//
//	{"Overlaps": n, "OverlapsByVolume": {"<volume>": n}, "MaxParallel": n,
//	 "Calls": {"CreateVolume": n, ...}, "InFlight": n}
//
// Overlaps counts the calls that started while another call for the same
// volume was in flight, ABORTED ones included; MaxParallel is the most
// calls naming a volume in flight at once across all volumes, so a test can
// also see that different volumes do go in parallel; Calls counts every
// CSI call by method. A volume is keyed by its name: CreateVolume has only
// the name and volume IDs are random, so a call by volume_id (or
// CreateSnapshot's source_volume_id) is keyed by the name of the volume
// with that ID, which stays known after DeleteVolume. An ID mockcsi cannot
// place (never created, or deleted before this process started) is its own
// key. A clone's CreateVolume counts for the new volume only.
//
// The file is replaced (temp file, rename) at the end of every call, before
// the answer goes out. A call whose caller gave up or died ends in the
// plugin a moment later, so a test reads the file once InFlight is 0: it
// then holds every call made so far. The record continues across restarts
// on the same state dir; remove calls.json for a fresh one. It is one
// process's record: two processes sharing a state dir overwrite each
// other's, so tests that read it give each plugin a state dir of its own.
//
// # Handlers
//
// A handler on one volume checks its arguments (required), then runs its
// own work inside withVolume (operation lock, then the record, NOT_FOUND
// without one) and commits through commitVolume; an operation that only
// changes the record is one editVolume call. See volumeops.go.
package main
