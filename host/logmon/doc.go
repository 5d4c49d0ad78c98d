// Package logmon ships a task's stdout and stderr to capped, rotated files,
// from a process of its own.
//
// The agent is never the reader of a task's pipes: if it were, a task would
// block (or die of SIGPIPE) while the agent is down. Instead, for each
// launch, Start runs a shipper — the pluginhost binary re-executed as
// `pluginhost logmon` (Main) — in its own session, with the read ends of the
// task's two pipes as fds 3 and 4, and the log directory itself as fd 6:
// the agent opened it beneath the data dir (package allocdir), and the
// shipper, root like the agent, never resolves a path above its files. The task gets the write ends; the agent
// closes its copies at once, so the shipper sees EOF exactly when the task
// and everything it forked have closed their output, and then exits. It
// ignores SIGPIPE, SIGHUP and SIGINT: only the task's end ends it.
//
// Readiness is an event: the shipper writes "ok" (or the reason it cannot
// run) on fd 5 once its files are open, and Start waits for that line.
// Spawn does not: it returns as soon as the process exists, so that the
// task can be launched on the pipes while the shipper is still starting
// (an exec and a Go runtime, several milliseconds), and Ready collects the
// answer later. The pipes hold the task's early output until the shipper
// reads it; a shipper that fails leaves the task writing into a pipe with
// no reader, which is why the caller of Spawn must check Ready.
//
// Every file is opened beneath that descriptor through no link (package
// beneath), and must be a regular file with one link: a link a task
// planted at a log file's name is refused, never written through (on
// Nomad before 2.0.1 it was: CVE-2026-6959). The newest file refused at
// start is the shipper's readiness answer ("unsafe: ..."), and the task
// fails with it; a name a rotation would take that already exists is
// skipped, and the stream says so.
//
// Files are named as in Nomad, <dir>/<task>.stdout.<N> and .stderr.<N>. A
// Rotator writes into the highest N, starts N+1 when a file reaches its size
// cap (splitting a write across files, so no file exceeds it), and deletes
// files older than the newest max_files. N never goes back: a new shipper
// continues the series after a restart. A write error does not stop the
// draining: a task blocked on a full pipe is worse than a lost line.
package logmon
