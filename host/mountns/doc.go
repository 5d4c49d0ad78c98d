// Package mountns gives a task its volumes: the task runs in a mount
// namespace of its own in which each of its `volume_mount`s is a bind mount
// of the volume's published path at the mount's destination.
//
// # Why a namespace, and why a helper
//
// A Nomad exec task finds its volume at `destination` because the exec
// driver builds the task's root and binds the volume into it. pluginhost
// tasks see the host's filesystem (like raw_exec), so the same view needs
// the mount to exist for the task and for nobody else: a new mount
// namespace per task. Two tasks may then mount different volumes at the
// same destination, and a read_only mount is read-only for that task only.
// The namespace lives as long as the task's processes and goes with them;
// an agent killed with SIGKILL leaves it alone, and a restored task needs
// nothing redone.
//
// Go cannot run code between fork and exec, and the mounts must be made in
// the child's namespace before the task's binary runs. So the driver
// starts a small helper (Main; the pluginhost-nsexec binary, or
// `pluginhost nsexec`) in a fresh namespace (CLONE_NEWNS), which makes the
// mounts and then execs the task in place: same pid, same start time,
// same environment and descriptors, so everything that identifies a task
// (the handle, the orphan search, go-plugin's handshake on stdout) sees
// the task itself.
//
// # Propagation
//
// The helper first marks every mount of its namespace as a slave: mounts
// and unmounts the host makes later under a shared mount (the agent keeps
// the CSI mount root shared, see host.shareMountRoot) still reach the
// task's copy, so it never pins a file system the host has let go of (an
// unstaged block device), while the task's own binds never leak out to
// the host.
//
// # Paths
//
// Targets are absolute: the agent resolves a relative destination against
// the task directory before it gets here. A missing target is created
// (a directory, or an empty file for a block device); it is left in place
// afterwards, empty, as a mount point is.
package mountns
