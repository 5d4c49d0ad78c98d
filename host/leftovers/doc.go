// Package leftovers deals with what an agent killed with SIGKILL leaves
// behind, at the next start on its data dir: task cgroups no restored task
// owns (Cgroups), socket directories of allocations it no longer has
// (SocketDirs), and a state file that is missing or empty beside
// allocation directories (CheckStateFile, which refuses to start rather
// than lose track of running tasks).
//
// The rule for all of them: an agent touches only what its own records say
// is its. Two agents on one machine, or the project's tests beside a
// user's agent, used to kill each other's tasks when a sweep took
// everything under a shared cgroup parent for its own.
package leftovers
