// Package jobs is the job reconciler, the rollout judge and the collector
// of finished allocations: everything that decides which allocations of a
// job run. It owns the agent's allocation runners and reaches the rest of
// the agent through three narrow interfaces, so that its decisions are
// tested without processes or a state file:
//
//   - Store: the durable job records (state.DB).
//   - Factory: records new allocations, a submission's together with the
//     job's new version and its volume claims, in one commit (package
//     host wires it to the state store, the task runners and the volume
//     manager).
//   - Runner: one allocation's runner (taskrunner.AllocRunner), seen
//     through snapshots (taskrunner.AllocSnapshot).
//
// # Durable desired state, one reconciler
//
// A job is a record in the state store (state.Job): the version that
// should run, whether it is stopped or to be purged, the outcome of the
// latest roll-out and the last stable version. Every allocation stores the
// job version it runs. Changing a job is two steps, and only the first
// happens in the request:
//
//  1. record: Submit commits the new version and every allocation of it in
//     one transaction (Factory.Submit) and tracks their runners; StopJob
//     in package host commits the stop (and purge) flag. Nothing is ever
//     started that the store could forget, and after a crash a submission
//     is there whole or not at all.
//  2. reconcile: a pass runs on an internal/reconcile queue keyed by job
//     ID. It reads the record, takes one snapshot of every allocation and
//     decides (Decide, a pure function: plan.go) what to stop, create,
//     start, forget and record; then it acts. Stops run in the background:
//     a pass never waits for a kill_timeout. Task events and finished
//     allocations add the job to the queue again.
//
// Every job is added to the queue at start (Run), so whatever a killed
// agent left half done (an update, a stop, a purge) is finished by the
// same code that does it normally. jobMu keeps a pass from seeing a
// version that Submit has recorded but whose runners it has not tracked.
//
// # Roll-outs: health-gated and bounded
//
// A new version's allocations are healthy once every task has run for the
// group's update min_healthy_time and plugin tasks' plugins are healthy
// (judgeRollout: rollout.go); the version's roll-out fails when one fails
// or misses healthy_deadline. The rule:
//
//   - At any moment a group runs at most the allocations of the last
//     healthy version (state.Job.LastStable, or an earlier version whose
//     allocations are healthy now although no pass recorded it before
//     the next submission came), of the version that served when the
//     newest was submitted (state.Job.Serving), and of the newest.
//   - What serves is decided at submission, under jobMu, and recorded in
//     the same commit as the new version (ServingVersion): the stable
//     version when all its allocations are healthy now, or else the newest
//     version whose are, however briefly. A plugin updated 5 s after it
//     registered, with min_healthy_time 10 s, keeps serving; before, it was
//     stopped at once and an update that never became ready left none. The
//     stable version comes first, so three versions run only while the
//     stable one is down.
//   - A version superseded before it ever served is stopped at once,
//     with a JobVersionSuperseded event and a Killing event on each task
//     that says so; the newest version's allocations start only once the
//     superseded ones are dead.
//   - Updates stay health-gated: the last healthy version keeps serving
//     until the newest is healthy, then it stops. A newest version that
//     fails is stopped instead and the last healthy one keeps running (with
//     auto_revert, its spec is submitted again).
//   - A job that writes to a volume allowing one writer stops the old
//     version first: the new one cannot mount before the old releases.
//
// Before the bound, a count-3 job submitted again every 200 ms ran every
// unfinished version side by side: 150 task processes, and under two
// clients' steady updates 723 tasks, 723 log shippers and 13,000 file
// descriptors for jobs that wanted 12.
//
// # Collection
//
// gc collects finished allocations as Nomad's client does (gc.go).
package jobs
