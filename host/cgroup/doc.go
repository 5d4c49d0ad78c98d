// Package cgroup puts each task in a cgroup of its own, as Nomad's
// executor does for raw_exec and exec (issue 18): the job file's memory
// becomes a hard limit the kernel enforces, cpu a relative weight,
// stopping a task kills every process it made (setsid and double-forked
// children included), an OOM kill is told apart from a kill -9, and the
// task's memory and CPU use are read for `alloc status -stats` and the
// client.allocs.* metrics.
package cgroup
