// Package idpool hands out the agent's dynamic workload ids: uids (each
// also the user's primary gid) for exec tasks that name no `user`, and one
// gid per allocation for the directories its tasks share. It is Nomad's
// dynamic workload users (client { users { dynamic_user_min,
// dynamic_user_max } }), with one difference that matters: an id is held
// by its allocation until the allocation's directory is gone, not until
// the task stops. Files a task left in its directory are owned by its uid;
// handing that uid to the next task while they are still there would give
// it the previous task's files.
//
// The pool itself is memory. What is durable is each allocation's record,
// which holds its ids (state.Alloc.IDs): a restarted agent Holds the ids
// of every allocation it restores before it Acquires any. An id that the
// host's user or group database names is never handed out.
//
// Every agent of a machine defaults to the same range, so the pool can
// share it (ShareWith): each id it hands out or restores is leased in a
// directory all the machine's agents use (Leases), and an id another live
// agent leases is skipped.
package idpool
