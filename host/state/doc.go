// Package state is the agent's durable memory: one bbolt file,
// <data_dir>/state.db, holding the plugin registry's records and the
// allocations the agent runs, so that a restarted agent (kill -9 included)
// finds its plugins and tasks again instead of starting empty.
//
// # Using it
//
//	db, err := state.Open(filepath.Join(dataDir, "state.db"), state.Options{Logger: log})
//	defer db.Close()
//	reg, err := dynamic.New(dynamic.Config{Store: db}) // *DB is a dynamic.Store
//	allocs, err := db.LoadAllocs()                      // everything to restore
//
// Every write method runs in a bbolt read-write transaction, committed and
// fsynced before it returns: when PutPlugins or AppendTaskEvent returns nil
// the record survives a crash. Reads see a consistent snapshot. *DB is safe
// for concurrent use; bbolt serialises writers.
//
// A commit's cost is its fsyncs, not its size, so records that are written
// together should be committed together: Update runs a function with a Tx
// whose methods (PutAlloc, PutTaskState, PutTaskHandle, DeleteTaskHandle,
// AppendTaskEvent) all land in one commit, or, if the function fails, none
// of them. The task runner records a launch (handle, state, events, the
// allocation's status) this way, with one commit instead of five.
//
// # Layout
//
//	meta/schema_version          big-endian uint64
//	plugins/<key>                dynamic.PluginInfo as JSON
//	allocs/<alloc id>/alloc      Alloc as JSON
//	allocs/<alloc id>/tasks/<task>/{state,handle}
//	allocs/<alloc id>/tasks/<task>/events/<seq>
//	jobs/<job id>/job            Job: the version that should run, stop, purge
//	jobs/<job id>/versions/<v>   JobVersion, the last MaxJobVersions
//	volumes/<volume id>          volumes.Volume as JSON, with its claims (package csi/volumes)
//
// A plugin key is (type, name, alloc ID) as three uvarint-length-prefixed
// strings. The registry accepts any non-empty strings, so no separator is
// safe; length prefixes make the key injective, and Plugins refuses a record
// whose key does not parse back to the triple in its value.
//
// Allocations nest, so deleting one is deleting one bucket and nothing of it
// can be left behind. Task events are keyed by the events bucket's own
// NextSequence; since keys are ordered, the oldest is the first key and
// keeping the last 100 means deleting at most one key per append: the cost
// of an append does not depend on how long the task has lived. Task records
// are refused (ErrAllocNotFound) for an allocation without its record, so a
// task runner racing DeleteAlloc cannot resurrect a headless allocation.
//
// Values are JSON through four helpers (putJSON, getJSON, deleteKey,
// forEachJSON). JSON keeps the file readable with `bbolt get` and lets
// fields be added without a migration: unknown fields are ignored, missing
// ones are zero. Renaming or retyping a field is a schema change.
//
// # Adding a bucket, changing the schema
//
// A new top-level bucket is one name in topBuckets: every Open creates the
// buckets that are missing, so an empty new bucket needs no migration.
// A migration is for data already stored that must change shape. Append it to
// builtinMigrations; its position fixes the version it upgrades from
// (entry i upgrades version i+1 to i+2) and the binary's schema version is
// len(builtinMigrations())+1. Open checks the stored version:
//
//   - newer than this binary: refused with ErrSchemaTooNew ("state file X
//     has schema version N, this pluginhost understands up to M: upgrade
//     pluginhost"); a downgrade never reads data it does not understand;
//   - older: a consistent copy is first written to X.backup-v<N> (through a
//     temporary name and a rename, so a crash never leaves a half backup),
//     then each migration runs in its own transaction that also records the
//     version it produced. A crash or a failing migration leaves the file at
//     the last completed version, and the next Open resumes from there.
//
// Tests inject their own migration history through Options.migrations.
//
// # One agent per file
//
// bbolt takes an exclusive flock on the file. Open waits LockTimeout
// (default 1s, never infinite) and then fails with ErrLocked: "state file X
// is locked by another process (another pluginhost agent with the same
// data_dir?)". A second agent fails fast; it never hangs and never shares
// the file.
//
// # Damaged files
//
// The agent must never start empty over real data, and never crash on a bad
// file. Open therefore:
//
//  1. reads bbolt's two meta pages itself (precheck.go) and refuses a file
//     whose newest valid meta needs more bytes than the file has: bbolt
//     would touch the missing pages through its mmap and die of SIGBUS;
//     a file with no valid meta at all is refused as not bbolt;
//  2. opens the file read-only and reads every key and value of every
//     bucket on the calling goroutine, with memory faults turned into
//     panics (debug.SetPanicOnFault) and panics into ErrCorrupt. This must
//     come before the read-write open, which with NoFreelistSync walks the
//     whole tree on a goroutine of bbolt's own where nothing can recover;
//  3. opens read-write (bbolt's freelist rebuild now also checks page
//     references; its panics are recovered too, and the file descriptor that
//     holds the flock is closed so the lock is not leaked);
//  4. refuses a valid bbolt file that has buckets but not our meta bucket
//     (ErrNotStateFile), and a meta bucket without a readable version.
//
// A file with no buckets at all (new, or a crash between bbolt creating it
// and our first commit) is initialised: there is nothing in it to lose.
// A file whose newest meta page is torn opens on the other one, as bbolt
// intends, losing at most the last commit. A refused file is never written.
//
// Reads after Open recover bbolt panics into ErrCorrupt as well; a record
// that does not decode is an error naming the key, and LoadAllocs fails as a
// whole rather than restoring part of the allocations silently.
//
// # Commit cost
//
// The dynamic.Store contract asks that a write cost the same whatever the
// number of stored records. A bbolt commit costs: the dirty B+tree path
// (leaf plus every branch up to the root, copied on write), the freelist,
// the meta page, and two fdatasyncs. What grows with the data:
//
//   - tree depth: with ~56-byte keys and ~400-byte values, 100 plugins are
//     depth 2 and 100,000 are depth 4, so a commit writes 4 pages instead
//     of 2. This is logarithmic and unavoidable with a B+tree; larger pages
//     would cut one level but write more bytes per commit at every size.
//   - the freelist: by default bbolt writes the whole freelist on every
//     commit, which grows with fragmentation (after many allocations come
//     and go the file keeps its pages, all of them on the freelist). We set
//     NoFreelistSync, as etcd does: commits never write the freelist, and
//     Open rebuilds it by walking the tree, a cost paid once at start, where
//     we walk the tree anyway to validate it.
//   - freelist allocation: the default array freelist scans a sorted array
//     for a run of free pages, linear in the free page count, so a
//     fragmented file (many allocations gone) slows every commit.
//     FreelistMapType keeps free spans in hash maps and allocates in
//     constant time. On a freshly loaded file the two measure the same;
//     the choice is for the fragmented file a long-lived agent ends with.
//
// With those choices the two fdatasyncs dominate and do not grow, and a
// Register plus Deregister costs about the same at 100 and at 100,000
// registered allocations (BenchmarkRegistryRegisterDeregister/fsync). The
// CPU part alone (the nosync sub-benchmarks) grows about 1.8x from 100 to
// 100,000: the depth going from 2 to 4, two more page copies and pwrites per
// commit, and a larger heap for the garbage collector to scan.
//
// Volume writes (PutVolume, DeleteVolume) are group-committed (batch.go):
// the volume manager's 16 workers and the API's requests each write a
// record per step, and bbolt serialises writers, so each would otherwise
// wait for every commit ahead of it. A writer that finds a commit running
// queues; the next one to get the commit slot commits everything queued
// in one transaction. While writers stream in (others queued when the slot
// is taken, or the last commit was shared and recent) the leader also
// waits for more, as long as each comes within one commit's time of the
// last and for at most 2 ms: the fdatasyncs of a commit are what slows the
// plugins that sync on the same disk, and a write that joins saves one. A
// lone write commits at once, unless it comes within 2 ms of a shared
// commit: it then waits up to one commit's time for company. Otherwise
// there is no timer (bbolt's DB.Batch waits
// up to MaxBatchDelay, 10 ms by default, for company, and runs the commit
// on a timer goroutine where a panic on a damaged file could not be
// recovered). Writers whose call a leader took wait on their own channel,
// not on the slot. A function that fails is taken out of its transaction
// and the others committed without it.
//
// Measured on the shared 2-core test machine. BenchmarkPutVolume: about
// 0.21 ms per write alone; from 16 writers in a closed loop 0.07 ms per
// write without the wait and 0.10 ms with it (every writer is already
// queued there, so the leader's wait for one more finds none).
// BenchmarkVolumes100 (e2e): 2.7 commits per volume without the wait, 1.0
// with it; x-bare about 1.43 before, 1.30 to 1.37 after, with the decode
// cache (volumecache.go) and the event stream's shared flushes, and a
// median of 1.30 (62 runs, 1.15 to 1.48) once the cache kept entries
// across deletes. A longer wait (4 ms, gaps up to two commits) cuts the
// commits by a third again but measures no better (16 alternating runs):
// the plugin's queue then runs dry while writes wait, its idle gaps over
// 1 ms growing from 3-4 ms to 17-19 ms per 100 volumes (timed inside
// mockcsi).
package state
