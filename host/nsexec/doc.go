// Package nsexec starts a task inside what its driver promises it: the
// volumes it mounts, and for the exec driver a root of its own, private
// pid and ipc namespaces, a user and a capability set. The agent runs the
// helper (Main: the pluginhost-nsexec binary, or `pluginhost nsexec`) as
// the task's first program; the helper sets all of this up and then execs
// the task in place: same pid, same start time, same environment and
// descriptors, so everything that identifies a task (the handle, the
// orphan search, go-plugin's handshake on stdout) sees the task itself.
//
// # Why a helper
//
// Go cannot run code between fork and exec, and mounts, pivot_root and
// the capability sets must be arranged inside the child before the task's
// binary runs. The namespaces themselves come from the clone flags
// (SysProcAttr); everything that needs the new namespaces happens in Main.
// A task that needs none of it (raw_exec without volumes) is started
// directly and pays nothing.
//
// # Volumes
//
// A Nomad exec task finds its volume at `destination` because the exec
// driver binds it into the task's root. Each task gets a mount namespace
// of its own, so two tasks may mount different volumes at the same
// destination, and a read_only mount is read-only for that task only. The
// namespace lives as long as the task's processes; an agent killed with
// SIGKILL leaves it alone, and a restored task needs nothing redone.
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
// # The exec driver's root
//
// Nomad's exec driver copies its client's chroot_env into every task
// directory; the helper binds the same directories read-only instead
// (microseconds instead of a copy of /usr), plus /alloc (the allocation's
// shared directory), /secrets (a tmpfs, 0700, owned by the task's user),
// /tmp, a minimal /dev and a /proc of the task's pid namespace. The task
// directory becomes the root through pivot_root, and the host's root is
// detached: nothing else of the host is visible. Mount points the helper
// creates in the task directory stay behind, empty, as Nomad's copies do.
//
// The task keeps Nomad's capabilities but not Nomad's devices cgroup or
// runc's /proc fences, so the helper puts up the fences itself: every
// mount the task can write is nodev (noDev: no node it makes with
// CAP_MKNOD opens a device), and /proc's machine-wide entries are
// read-only or covered (fenceProc).
//
// # Paths the task can write
//
// The helper is root and works in the task's directory, which the task
// can write (an exec task holds CAP_DAC_OVERRIDE in its root). Everything
// it makes there, mount points, /tmp, the chroot_env links, is made
// beneath the directory through no link (package beneath), and every
// mount lands on the /proc/self/fd name of the directory it resolved: a
// task that replaced /tmp or a mount point with a link to a host
// directory gets its next launch refused, naming the link, instead of a
// chmod or a bind made by root over the host's directory.
//
// # Reporting
//
// A failure to set the task up is written to the spec's Report
// descriptor (close-on-exec, so the agent reads end of file once the
// task's binary runs): the agent makes it the launch's error, and a
// refused link (beneath.ErrUnsafe, "unsafe: ...") fails the task.
//
// # Seccomp and descriptors
//
// Before it drops to the task's user the helper marks every descriptor
// above 2 close-on-exec (runc closes them: an agent started with 7</
// gave its tasks the host's /) and, for an exec task, installs the
// default seccomp filter (package host/seccomp), while it still holds
// CAP_SYS_ADMIN: exec tasks do not run with no_new_privs, as on Nomad.
//
// # User and capabilities
//
// The helper changes to the task's user last, after every mount. For exec
// it keeps exactly the task's capability set (Nomad's default set with
// cap_add and cap_drop applied) in the bounding, permitted, effective,
// inheritable and ambient sets, so a task running as nobody still has
// CAP_DAC_OVERRIDE, as it does under Nomad. For raw_exec the change of
// user is a plain one: no capabilities survive it.
//
// # Paths
//
// Volume targets are absolute: the agent resolves a relative destination
// against the task directory before it gets here; with a root they are
// paths inside it. A missing target is created (a directory, or an empty
// file for a block device) and left in place afterwards, as a mount point
// is.
package nsexec
