// Package e2e holds end-to-end tests and agent-level benchmarks of
// pluginhost. It has no code of its own besides this comment: everything is
// in _test.go files, and nothing here is imported by anything else.
//
// # What is real
//
// Every test runs the real `pluginhost` binary (internal/testbin builds it,
// or takes it from PLUGINHOST_TEST_BIN_DIR under `make test`) as a
// subprocess, with a config file it writes into a short temporary directory
// (os.MkdirTemp("", "ph-e2e-"): t.TempDir paths are long enough to push the
// agent's API socket and the plugin sockets past the 107-byte sun_path
// limit). Tasks are real processes: /bin/sh loops under raw_exec and the
// real mockcsi binary under go_plugin and raw_exec. The agent is killed with
// a real SIGKILL and started again on the same data dir.
//
// # How tests see processes
//
// The API reports a task's pid only inside the text of its Started and
// Reattached events, so tests find task processes themselves: every task a
// test runs carries an environment variable E2E_MARK with a value unique to
// the test and task. A scan of /proc for that value finds every process
// the task left behind, including ones the agent has forgotten (orphans).
// The task's "top" process is the one whose parent lacks the marker; a
// shell loop's short-lived children are thereby not counted as duplicates.
//
// # Waiting
//
// Tests wait on events, never on sleeps: the agent's start by the line it
// prints once its API listens, readiness and task transitions by the event
// stream (subscribe first, then check the current state, then wait, so no
// transition falls between the two). Where there is no event (a log file
// growing while the agent is down, a process disappearing after an agent
// that no longer exists killed it) a poll with a deadline is used.
//
// # The chaos test
//
// TestChaos (chaos_test.go) runs the agent through random rounds of churn on
// a few job IDs: runs, updates (a new token in the task's marker and
// script, sometimes a new count), stops, purges, shell tasks under
// raw_exec and under exec (own root, pid namespace, user nobody), half of
// them with a 16 MB memory limit and an OOM-killed child, mockcsi as a
// CSI plugin under go_plugin and under raw_exec, and SIGKILLs of task
// processes, all fired at once (the first round runs every job); it kills the agent with SIGKILL at a random moment of that
// churn and starts it again on the same data dir. The test keeps a model of
// what each job must be: a submission answered 200 is accepted, one answered
// with an error is not, one cut off by the kill may have been either, so the
// job may be in either state but must be in one of them, whole. After every
// restart it waits until the state has converged (re-checking on every
// event; a failure counts once nothing has happened for a few seconds) and
// checks that the agent is ready, that each running task is one process with
// the recorded pid, that no task process is left over, that no accepted job
// or allocation is lost, that each job runs its last accepted spec with its
// count and version, that running plugins are healthy and active, and
// that each running task is in its own cgroup with no other task cgroup
// left under the env's parent.
// After the last round it stops every job and checks that no task
// process, log shipper, task cgroup (under the env's own cgroup_parent)
// or mount is left. The
// random choices come from -chaos.seed, logged first, and the number of
// rounds from -chaos.rounds: `make test` runs a few rounds, `make chaos
// SEED=.. ROUNDS=..` a long run that counts failures per check
// (-chaos.keepgoing purges a failing job and goes on). The seed fixes the
// random choices, not the timing of the agent's work, so which submissions a
// kill cuts off may differ between two runs of a seed: a failure is
// reproduced by running its seed a few times. TestChaosChecksSeeDefects
// plants a second task copy, a stray marked process and an unexpected job,
// so that a check gone blind does not pass unnoticed.
//
// # Cleanup
//
// Each test's t.Cleanup kills its agent and then every process whose
// command line or environment mentions the test's temporary directory (task
// processes carry it in NOMAD_ALLOC_DIR, log shippers in their arguments),
// by process group and by pid, and removes the directory, also when the
// test failed half-way.
package e2e
