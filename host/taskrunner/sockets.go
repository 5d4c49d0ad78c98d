package taskrunner

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/driver"
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

// ensureSocketDir creates dir 0700 with its parents, and insists that the
// final directory is ours alone whatever the umask. The sockets in it are
// made 0600 once bound (driver.TightenSocket); a task with a user gets the
// directory as its own from giveSocketDir.
func ensureSocketDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("socket dir: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("socket dir: %w", err)
	}
	return nil
}

// socketDirDepth is how many directories above a task's socket directory
// the agent made: <allocation>/, the agent's socket root, and the shared
// root above it (see SocketRoot).
const socketDirDepth = 3

// giveSocketDir makes a task's socket directory its user's (still 0700),
// and lets that user through the directories above it (0711: search, not
// list), so the task reaches its own socket and no other task's.
func giveSocketDir(dir string, uid, gid uint32) error {
	if err := os.Chown(dir, int(uid), int(gid)); err != nil {
		return fmt.Errorf("socket dir: %w", err)
	}
	p := dir
	for range socketDirDepth {
		p = filepath.Dir(p)
		if err := searchable(p); err != nil {
			return fmt.Errorf("socket dir: %w", err)
		}
	}
	return nil
}

// RemoveStaleSockets removes every unix socket under dir (two levels deep,
// which covers go-plugin's plugin-dir*/plugin*) that refuses connections:
// a socket nobody listens on was left by a process that died, and a new
// launch must not find it. Emptied go-plugin directories go too.
func RemoveStaleSockets(dir string) ([]string, error) {
	var removed []string
	var errs []error
	var walk func(d string, depth int)
	walk = func(d string, depth int) {
		ents, err := os.ReadDir(d)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
			return
		}
		for _, e := range ents {
			p := filepath.Join(d, e.Name())
			switch {
			case e.IsDir() && depth < 2:
				walk(p, depth+1)
				if depth == 1 {
					_ = os.Remove(p) // only succeeds when empty
				}
			case e.Type()&os.ModeSocket != 0 && !listening(p):
				if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
					errs = append(errs, err)
					continue
				}
				removed = append(removed, p)
			}
		}
	}
	walk(dir, 1)
	return removed, errors.Join(errs...)
}

func listening(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		// Only refusal proves death; a busy listener (EAGAIN) is alive.
		return !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ENOENT)
	}
	_ = c.Close()
	return true
}
