// Package mounts holds the mounts the agent makes for itself, each only
// while it is needed:
//
//   - The trees tasks write (<data_dir>/alloc and the socket root) are
//     nosuid,nodev mounts of their own (ContainTree): a task holding
//     Nomad's default capabilities can chown a copy of a shell to root and
//     set its setuid bit, or mknod a node of the host's disk, and another
//     local user reaching that file through the host's path would get root
//     or the disk. Made at start, before any task; kept while allocations
//     exist (tasks outlive the agent), removed at a clean stop when none
//     do (ReleaseTree).
//   - The CSI mount root is shared (Root), made when the first CSI plugin
//     task starts, not by an agent that never serves CSI.
//
// Mounts inside a task's own namespace are package nsexec's.
package mounts
