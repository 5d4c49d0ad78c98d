// Package cgroup puts each task in a cgroup of its own, as Nomad's
// executor does for raw_exec and exec (issue 18): the job file's memory
// becomes a hard limit the kernel enforces, cpu a relative weight, the
// agent's pids_limit a cap on processes and threads, stopping a task
// kills every process it made (setsid and double-forked children
// included), an OOM kill is told apart from a kill -9, and the task's
// memory, CPU and process count are read for `alloc status` and the
// client.allocs.* metrics.
//
// # Layout
//
// A task's cgroup is Parent/<name> (default "/pluginhost/<allocID>.<task>")
// in every hierarchy: on cgroup v2 one directory under the unified mount;
// on v1 one in each of the memory, cpu, cpuacct, freezer and pids
// hierarchies that are mounted (co-mounted ones such as "cpu,cpuacct"
// count once). The path, the same in every hierarchy, is all the agent
// persists: after a restart, even after a kill -9 of the agent, Open finds
// the group again with the task's processes still in it, and Leftovers
// lists groups whose tasks the agent no longer knows.
//
// # Limits, as Nomad writes them
//
// memory (MB) is the hard limit (v1 memory.limit_in_bytes, v2 memory.max).
// With memory_max, memory is the reservation (memory.soft_limit_in_bytes,
// memory.low) and memory_max the hard limit, -1 for none. cpu (MHz) is
// written as cpu.shares unchanged on v1 and converted to cpu.weight on v2
// with the conversion Nomad's pinned opencontainers/cgroups uses (see
// CPUWeight). On v1 memory.swappiness is set to 0, as Nomad does, so a task
// over its limit is killed rather than swapped.
//
// The process limit is not the job's but the agent's (pids_limit; Nomad
// and Docker set none, Podman's default is 2048): pids.max, the same file
// in v1's pids hierarchy and in a v2 group, "max" for none. It counts
// threads as well as processes, so one task cannot use up the machine's
// pid_max; a fork or clone past it fails with EAGAIN (a Go program dies of
// that: its runtime cannot do without a thread it asked for). Without the
// pids controller nothing is written, and Detect says so once.
//
// # Joining before the task runs
//
// A process must be in its group before it runs user code, or a fast fork
// escapes the limit and the kill. On v2 the child is born in the group:
// the driver passes Group.FD as SysProcAttr.CgroupFD (clone3 with
// CLONE_INTO_CGROUP). v1 has no such thing, but a v1 thread can be in
// other cgroups than its process: the forking thread enters the group
// (Group.EnterThread), forks, and leaves, so the child is born in it. A
// pid written into cgroup.procs (Group.AddPid, which the driver falls back
// to with the child stopped at exec) costs an RCU grace period in the
// kernel each time, about 10 ms on this machine; the thread's round trip
// needs none.
//
// # Why not a library
//
// Two well-kept libraries do cgroups in Go; figures from a throwaway
// module importing each (go 1.26, `go list -deps`, a blank-import binary
// versus an empty one at 1.8 MB):
//
//   - github.com/containerd/cgroups/v3 v3.1.3 (cgroup1 + cgroup2): 34
//     modules in the build graph (go list -m all), 12 compiled (cilium/ebpf, logrus,
//     coreos/go-systemd + godbus/dbus, opencontainers/runtime-spec,
//     protobuf, x/exp, docker/go-units, ...), 52 non-standard packages,
//     +8.1 MB of binary. v1 limits are given as runtime-spec
//     LinuxResources; stats come as protobuf messages.
//   - github.com/opencontainers/cgroups v0.1.0 (fs + fs2 + manager): 15
//     modules in the graph, 8 compiled (logrus, go-systemd, godbus/dbus,
//     moby/sys/mountinfo and userns, cyphar/filepath-securejoin, x/sys), 16
//     non-standard packages (14 for fs + fs2 alone, which still pull in
//     go-systemd and dbus), +2.5 MB.
//
// Neither does the three things this package exists for better than ~1400
// lines of our own:
//
//   - Joining before exec on v1: neither can (no one can: v1 only has
//     cgroup.procs); both offer a pid write after the fact (containerd
//     Add/AddProc, opencontainers Apply/AddPid), which is what AddPid is.
//     On v2 neither hands out the directory descriptor clone3 needs
//     (runc opens it inside libcontainer, not in the cgroups module).
//   - A test root: both can be pointed at directories (containerd
//     cgroup2.NewManager(mountpoint, ...) and cgroup1.WithHiearchy with
//     per-subsystem roots; opencontainers fs.NewManager with a path per
//     controller and fs2.NewManager with a directory). Not a reason either
//     way.
//   - Killing every process: containerd's cgroup2 Manager.Kill uses
//     cgroup.kill (with a fallback), but its cgroup1 has only Freeze, Thaw
//     and Processes; opencontainers/cgroups has no kill at all (runc's
//     freeze–kill–thaw loop lives in libcontainer, which would bring in far
//     more). The v1 sweep would be ours in any case.
//
// What we would get from them is limit writing and stats parsing for two
// versions, a few hundred lines; what we would pay is a dbus and systemd
// client we never call, a logger other than hclog, and (containerd)
// cilium/ebpf and protobuf types, in the agent binary every pluginhost
// user runs. The one fact we take from opencontainers/cgroups is its
// shares-to-weight formula, because Nomad uses it.
//
// # Kill
//
// v2 writes cgroup.kill, which the kernel applies to the whole group and
// to children forked while it runs. v1 (and v2 before Linux 5.14) freezes
// the group with the freezer controller, SIGKILLs every listed process,
// thaws so the signals are acted on, and repeats until the group is empty;
// frozen processes cannot fork between the listing and the kill. With the
// pids controller pids.max is also 0 while the sweep runs (and put back
// after): a fork or clone in the group fails with EAGAIN, frozen or not,
// and a Kill interrupted by the agent's death leaves 0 in a group whose
// task was being ended (the next Create writes the limit again). A v1 host
// without the freezer hierarchy still works: each round kills what it
// lists, and a fork loop is emptied a generation per round, but a process
// forked after the listing lives until the next round. So a round ends by
// listing the group again, and only that list, empty, ends the kill: the
// list just signalled may be all dead while a child forked from it lives.
// Zombies count as gone (the kernel no longer lists them in cgroup.procs;
// their parent, the agent for the task's own process, reaps them).
//
// # Caveats
//
//   - v1 hierarchies are found from /proc/self/mountinfo; one mounted at a
//     non-root cgroup (a container's own view) is used as its root. cpuset
//     is not used, so `cores` needs more work on v1.
//   - v2 needs the memory controller offered by the root's
//     cgroup.controllers; Create enables memory, cpu and pids in
//     cgroup.subtree_control from the root down to Parent. On a systemd
//     host a Parent named like a slice ("pluginhost.slice", as Nomad's
//     "nomad.slice") keeps systemd's view tidy; systemd leaves a foreign
//     top-level cgroup alone.
//   - Tasks leave the agent's own cgroup (its systemd service, a
//     container's limits): their memory is limited by Limits only and no
//     longer counted against the agent's unit, as with Nomad's /nomad.
//   - The v1 sweep signals pids it read from cgroup.procs while the group
//     was frozen; a frozen process cannot exit, so the pid cannot be reused
//     in between, except by one already dying from the previous round.
//   - pids.current counts a process until its parent reaps it, and a
//     killed task's orphans are reaped by init: on this machine in
//     batches seconds apart. A group emptied by Kill is removed (a new
//     launch gets a new one), but one reused at once, as Prestart does
//     with a group an earlier launch left, starts with their charge.
//   - v2 does not touch swap (memory.swap.max), as Nomad does not.
//   - Options.Root without a memory controller (a hybrid host's
//     /sys/fs/cgroup/unified) is accepted for tests: membership, kill and
//     rmdir are real there, limits are not written.
package cgroup
