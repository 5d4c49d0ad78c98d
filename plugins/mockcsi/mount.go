package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// Mount methods. A volume is a directory, so "mounting" it is a bind mount;
// where the process may not mount (not root, no CAP_SYS_ADMIN, a locked-down
// container) it falls back to a symlink at the target path pointing at the
// volume's directory. The symlink gives the workload the same files but is
// not a mount: it cannot be read-only and it does not show in mountinfo.
const (
	mountAuto    = "auto"    // bind, falling back to symlink on EPERM/EACCES
	mountBind    = "bind"    // bind only; errors are returned
	mountSymlink = "symlink" // never mount
)

// mounter performs node-side attach operations. Each record in the state
// file remembers which method made it, so that a later fallback (or a
// restart with another --mount-method) still undoes it the right way.
type mounter struct {
	method string
	log    hclog.Logger
	// fellBack makes the auto fallback log once, not on every publish.
	fellBack sync.Once
}

func newMounter(method string, log hclog.Logger) (*mounter, error) {
	switch method {
	case "":
		method = mountAuto
	case mountAuto, mountBind, mountSymlink:
	default:
		return nil, fmt.Errorf("unknown mount method %q (want %s, %s or %s)", method, mountAuto, mountBind, mountSymlink)
	}
	return &mounter{method: method, log: log}, nil
}

// bind bind-mounts src on dst (a directory that must exist) and makes it
// read-only if asked. It returns the method used: mountBind, or
// mountSymlink when auto mode found mounting not permitted (the caller
// then creates the symlink it needs).
func (m *mounter) bind(src, dst string, readonly bool) (string, error) {
	if m.method == mountSymlink {
		return mountSymlink, nil
	}
	mounted, err := isMountpoint(dst)
	if err != nil {
		return "", err
	}
	if !mounted {
		if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
			if m.method == mountAuto && (errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)) {
				m.fellBack.Do(func() {
					m.log.Warn("bind mounts not permitted, falling back to symlinks", "error", err)
				})
				return mountSymlink, nil
			}
			return "", fmt.Errorf("bind mount %s on %s: %w", src, dst, err)
		}
	}
	if readonly {
		// A bind mount ignores MS_RDONLY on creation; only a remount applies it.
		if err := unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			_ = unmountAll(dst)
			return "", fmt.Errorf("remount %s read-only: %w", dst, err)
		}
	}
	return mountBind, nil
}

// unmountAll removes every mount stacked on path; a path that is not a
// mount point is fine.
func unmountAll(path string) error {
	for range 16 {
		mounted, err := isMountpoint(path)
		if err != nil || !mounted {
			return err
		}
		if err := unix.Unmount(path, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("unmount %s: %w", path, err)
		}
	}
	return fmt.Errorf("unmount %s: still mounted after 16 unmounts", path)
}

// isMountpoint reports whether path is a mount point in this process's
// mount namespace, by reading /proc/self/mountinfo: comparing st_dev with
// the parent's misses bind mounts from the same filesystem.
func isMountpoint(path string) (bool, error) {
	abs, err := resolve(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	points, err := mountPoints()
	if err != nil {
		return false, err
	}
	_, ok := points[abs]
	return ok, nil
}

// mountPoints returns the set of mount points from /proc/self/mountinfo.
func mountPoints() (map[string]struct{}, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	defer f.Close()
	points := map[string]struct{}{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		// Field 5 is the mount point, with space, tab, newline and
		// backslash escaped as \ooo.
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		points[unescapeMountinfo(fields[4])] = struct{}{}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	return points, nil
}

func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// resolve makes path absolute with symlinks in its parents resolved, as
// mountinfo reports it. The last element is not followed: a symlink made by
// the fallback is not a mount point.
func resolve(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if _, err := os.Lstat(abs); err != nil {
		return "", err
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", err
	}
	return filepath.Join(parent, filepath.Base(abs)), nil
}
