// Package beneath is how a privileged process acts on a directory tree that
// somebody it does not trust can write: a task's directories, its log
// directory, its socket directory, a CSI plugin's mount directory.
//
// The agent, the log shipper and the mount helper run as root. A task that
// can write into its own directory can replace any entry there with a
// symbolic link to a host path (/etc, the agent's token file) and wait for
// root to open, create, chmod or chown "its" file. Nomad shipped this class
// of bug for years (HCSEC-2026-14: the log FIFO; #23738, #19887, #19888).
// A check before the use does not help: the task swaps the entry between
// the two. The only sound way is to resolve every path relative to a
// directory descriptor that is already held, without following any link,
// and to act on the descriptor that resolution returned.
//
// # The rules
//
//   - A Dir is an open directory. Every path given to its methods is
//     relative, clean and free of "..", and is resolved beneath the Dir by
//     openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS: a symbolic
//     link anywhere in the path, the last element included, is refused.
//     Where openat2 is missing (Linux before 5.6) each element is opened
//     in turn with O_NOFOLLOW, which refuses the same paths.
//   - What is opened is checked for what the caller expects (a directory,
//     a regular file, a socket), and regular files must have one link: a
//     hard link is a second name of a file that may live outside the tree
//     (a task with CAP_FOWNER can make one to a file it cannot write).
//   - chmod and chown go through the opened descriptor (fchmod, fchownat
//     with AT_EMPTY_PATH), never through a path.
//   - Unix sockets are dialled through the descriptor of the socket file
//     itself (/proc/self/fd/N names that inode and nothing else), so that
//     swapping the socket for a link to another process's socket between
//     a check and the connect changes nothing.
//   - Modes carry the sticky, setgid and setuid bits as os.ModeSticky,
//     os.ModeSetgid and os.ModeSetuid. A mode with raw 0o7000 bits is an
//     error: os.Chmod(p, 0o1777) silently drops the sticky bit, and this
//     package will not repeat that mistake quietly.
//
// A refusal is an *UnsafeError naming the offending entry (the path as the
// agent sees it) and what it is, so that the caller can tell the user
// which path a task tampered with.
//
// The top of a tree is opened with Open, which follows the operator's
// links like any path the agent is configured with: the data dir may be a
// symlink. Everything below it is the untrusted part.
package beneath
