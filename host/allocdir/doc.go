// Package allocdir makes an allocation's directory tree, Nomad's layout
// under <data_dir>/alloc/<alloc id>, with the owners and modes that keep
// other local users and other allocations out, through package beneath
// only: tasks write into this tree, and the agent that builds it is root.
//
// # Layout, owners and modes
//
// G is the allocation's group, a gid of the agent's dynamic range
// (host/idpool) that every task of the allocation running as a user of its
// own holds as a supplementary group. Nobody else holds it, so "the group"
// below means "the tasks of this allocation" and "others" means every other
// local user and every task of another allocation.
//
//	<data_dir>/alloc             root    0711  every allocation's user passes
//	  <alloc id>/                root:G  0710  only the allocation's tasks pass
//	    alloc/                   root:G  3770  NOMAD_ALLOC_DIR, shared by the tasks; new files get
//	                                           group G; sticky, so no task renames what is not its own
//	      logs/                  root:G  2750  written by the log shipper only; tasks read
//	        <task>.stdout.N      root:G  0640
//	    <task>/                  root:G  0750  an exec task's root ("/" must be readable)
//	      local/                 U       0700  NOMAD_TASK_DIR
//	      secrets/               U       0700
//	      tmp/                   root    1777  exec tasks' /tmp (made by the mount helper)
//
// U is the task's user (its dynamic uid, or its `user`), or root for a
// task that runs as the agent's user. Tasks of an exec driver see alloc/
// at /alloc and alloc/logs read-only at /alloc/logs (package nsexec), as
// on Nomad since 2.0.1; raw_exec tasks cannot write logs/ either (it is
// root's, and they hold no capability), nor move it aside and put a link
// in its place (alloc/ is sticky).
//
// Without G (the dynamic range turned off, an agent that is not root, or
// an allocation recorded before there were ranges) the modes are Nomad's,
// minus world-readable logs: <alloc id> 0711, alloc/ 1777, logs/ 0700
// with 0600 files, <task>/ 0755.
//
// Every mode is set at every launch, not only when a directory is made,
// so a task that chmodded its tree back open, or a tree made by an older
// agent, is set right before the next launch.
package allocdir
