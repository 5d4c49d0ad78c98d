package taskrunner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
	"time"

	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/internal/beneath"
)

// MaxSocketPath is the unix socket path limit, defined once for the host
// side in package dynamic.
const MaxSocketPath = dynamic.MaxSocketPathLen

// SocketBudget is the room every allocation socket directory leaves for
// what goes inside it: a task's own directory (TaskSocketDir), then
// go-plugin's per-launch directory and socket name, or a CSI endpoint such
// as "/csi.sock" (which is shorter).
const SocketBudget = 1 + maxTaskSocketElem + driver.GoPluginSocketOverhead

// maxTaskSocketElem bounds a task's socket directory name, "t<index>".
const maxTaskSocketElem = 5

// TaskSocketDir is a task's own socket directory inside its allocation's:
// every task gets one, as in Nomad, so two plugin tasks of one group never
// share (or remove) each other's socket. It is named by the task's index
// in its group ("t0", "t1", ...), as stable as the job version the
// allocation runs and short: task names may be 128 bytes, sun_path holds
// 107.
func TaskSocketDir(allocSocketDir string, index int) string {
	return filepath.Join(allocSocketDir, fmt.Sprintf("t%d", index))
}

// SocketDir picks the allocation's control socket directory:
// <root>/<alloc-id>, where root is <data_dir>/sockets if that is short
// enough, else a short root the agent controls derived from a hash of the
// data dir (/run/pluginhost/<8 hex>, or $TMPDIR/pluginhost-<8 hex>). The
// choice depends only on its inputs, so a restarted agent finds the same
// directory. The error names the path and the limit when nothing fits.
func SocketDir(dataDir, override, allocID string) (string, error) {
	if err := CheckPathElem("allocation ID", allocID); err != nil {
		return "", err
	}
	need := 1 + len(allocID) + SocketBudget
	var tried []string
	for _, root := range socketRoots(dataDir, override) {
		if len(root)+need <= MaxSocketPath {
			return filepath.Join(root, allocID), nil
		}
		tried = append(tried, root)
	}
	return "", fmt.Errorf("no socket root short enough: %s/%s plus %d bytes for the plugin socket exceeds the %d-byte unix socket limit (tried %q); use a shorter data_dir or socket_dir",
		tried[0], allocID, SocketBudget, MaxSocketPath, tried)
}

// SocketRoot is the root under which SocketDir puts every allocation's
// socket directory for this data dir (allocation IDs all have one length).
func SocketRoot(dataDir, override string) (string, error) {
	d, err := SocketDir(dataDir, override, "00000000-0000-4000-8000-000000000000")
	if err != nil {
		return "", err
	}
	return filepath.Dir(d), nil
}

func socketRoots(dataDir, override string) []string {
	if override != "" {
		return []string{override}
	}
	sum := sha256.Sum256([]byte(dataDir))
	tag := hex.EncodeToString(sum[:4])
	roots := []string{filepath.Join(dataDir, "sockets")}
	if w, err := os.Stat("/run"); err == nil && w.IsDir() && unixWritable("/run") {
		roots = append(roots, filepath.Join("/run/pluginhost", tag))
	}
	return append(roots, filepath.Join(os.TempDir(), "pluginhost-"+tag))
}

func unixWritable(dir string) bool {
	return syscall.Access(dir, 2 /* W_OK */) == nil
}

// openTaskSocketDir makes (or sets right) a task's socket directory and
// returns it opened: <root>/<alloc> is root's 0711 (search, not list),
// <root>/<alloc>/t<i> the task user's (or root's) 0700. Everything is made
// beneath the socket root without following a link: the task owns t<i>,
// and the fallback roots live in shared directories (see openSocketRoot).
// With a user of its own the task must get through the directories above
// its socket, so they are made searchable.
func openTaskSocketDir(dir string, u *driver.User) (*beneath.Dir, error) {
	allocDir := filepath.Dir(dir)
	root, err := openSocketRoot(filepath.Dir(allocDir))
	if err != nil {
		return nil, err
	}
	defer root.Close()
	ad, err := root.MkdirAll(filepath.Base(allocDir), 0o711)
	if err != nil {
		return nil, fmt.Errorf("socket dir: %w", err)
	}
	defer ad.Close()
	if err := ad.Chmod(0o711); err != nil {
		return nil, fmt.Errorf("socket dir: %w", err)
	}
	td, err := ad.MkdirAll(filepath.Base(dir), 0o700)
	if err != nil {
		return nil, fmt.Errorf("socket dir: %w", err)
	}
	uid, gid := os.Geteuid(), os.Getegid()
	if u != nil {
		uid, gid = int(u.UID), int(u.GID)
	}
	err = td.Chown(uid, gid)
	if err == nil {
		err = td.Chmod(0o700)
	}
	if err == nil && u != nil {
		err = searchable(root)
	}
	if err != nil {
		_ = td.Close()
		return nil, fmt.Errorf("socket dir: %w", err)
	}
	return td, nil
}

// openSocketRoot opens the root of the socket directories, making it if
// missing. Its parent is the agent's (the data dir, or /run/pluginhost,
// which only root can write) or a shared one ($TMPDIR, where any local
// user could have made the directory first): so the root is made beneath
// its parent without following a link, and refused unless it is the
// agent's own and nobody else may write into it.
func openSocketRoot(root string) (*beneath.Dir, error) {
	parent := filepath.Dir(root)
	if err := os.MkdirAll(parent, 0o711); err != nil {
		return nil, fmt.Errorf("socket root: %w", err)
	}
	top, err := beneath.Open(parent)
	if err != nil {
		return nil, fmt.Errorf("socket root: %w", err)
	}
	defer top.Close()
	d, err := top.MkdirAll(filepath.Base(root), 0o711)
	if err != nil {
		return nil, fmt.Errorf("socket root: %w", err)
	}
	st, err := d.Stat()
	if err == nil && (int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0) {
		err = fmt.Errorf("socket root %s is owned by uid %d with mode %#o: it must be this agent's (uid %d) and writable by nobody else; remove it or set plugin { socket_dir }",
			root, st.Uid, st.Mode&0o7777, os.Geteuid())
	}
	if err == nil && parent == sharedRunRoot {
		// Tasks with a user pass through /run/pluginhost too.
		err = searchable(top)
	}
	if err != nil {
		_ = d.Close()
		return nil, err
	}
	return d, nil
}

// sharedRunRoot holds root's fallback socket roots, one per data dir.
const sharedRunRoot = "/run/pluginhost"

// RemoveStaleSockets removes every unix socket under dir (two levels deep,
// which covers go-plugin's plugin-dir*/plugin*) that refuses connections:
// a socket nobody listens on was left by a process that died, and a new
// launch must not find it. Emptied go-plugin directories go too.
func RemoveStaleSockets(dir string) ([]string, error) {
	d, err := beneath.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return removeStaleSockets(d)
}

// removeStaleSockets is RemoveStaleSockets on an opened directory, which
// the task owns: nothing below it is followed, and a socket is dialled
// through its own descriptor (beneath.Dir.DialUnix) to see whether
// anything listens.
func removeStaleSockets(d *beneath.Dir) ([]string, error) {
	var removed []string
	var errs []error
	var walk func(rel string, depth int)
	walk = func(rel string, depth int) {
		names, err := d.Names(rel)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
			return
		}
		for _, n := range names {
			p := n
			if rel != "." {
				p = rel + "/" + n
			}
			st, err := d.Lstat(p)
			if err != nil {
				continue
			}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFDIR:
				if depth < 2 {
					walk(p, depth+1)
					if depth == 1 {
						_ = d.Remove(p) // only succeeds when empty
					}
				}
			case unix.S_IFSOCK:
				if listening(d, p) {
					continue
				}
				if err := d.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
					errs = append(errs, err)
					continue
				}
				removed = append(removed, filepath.Join(d.Name(), p))
			}
		}
	}
	walk(".", 1)
	return removed, errors.Join(errs...)
}

func listening(d *beneath.Dir, rel string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := d.DialUnix(ctx, rel)
	if err != nil {
		// Only refusal proves death; a busy listener (EAGAIN) is alive.
		return !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ENOENT)
	}
	_ = c.Close()
	return true
}
