package nsexec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// bind mounts m.Source at target (m.Target, or its place inside a root);
// rec takes the mounts below the source along (chroot_env's /usr may hold
// some), a volume is one mount.
//
// within, when not "", is a directory the task's user can write into (its
// task directory) that target lies in: then target is made and found
// through within without following a symlink out of it (see confined), so
// a task that planted local/data -> /etc before its next launch gets a
// refusal, not a bind over the host's /etc made by root.
func bind(m Mount, within, target string, rec bool) error {
	at := func() (string, func(), error) { return target, func() {}, ensureTarget(target, m.File) }
	if within != "" {
		at = func() (string, func(), error) { return confined(within, target, m.File) }
	}
	mp, done, err := at()
	if err != nil {
		return err
	}
	flags := uintptr(unix.MS_BIND)
	if rec {
		flags |= unix.MS_REC
	}
	err = unix.Mount(m.Source, mp, "", flags, "")
	done()
	if err != nil {
		return fmt.Errorf("bind %s at %s: %w", m.Source, m.Target, err)
	}
	// The remounts below name the new mount: found again, the path now
	// ends on it.
	if target, done, err = at(); err != nil {
		return err
	}
	defer done()
	if err := readOnly(m, target, rec); err != nil {
		return err
	}
	if m.noDev {
		return noDev(target)
	}
	return nil
}

// readOnly makes the new mount at target read-only when m asks for it.
func readOnly(m Mount, target string, rec bool) error {
	if !m.ReadOnly {
		return nil
	}
	if rec {
		// A remount reaches the top mount only: the mounts below a
		// chroot_env directory that came along would stay writable.
		// mount_setattr is Linux 5.12; older kernels get the top
		// mount read-only, as before it.
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
		err := unix.MountSetattr(-1, target, unix.AT_RECURSIVE, &attr)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.ENOSYS) {
			return fmt.Errorf("make %s read-only: %w", m.Target, err)
		}
	}
	// A bind mount takes the read-only flag only on a remount.
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
	if err := unix.Mount("", target, "", flags, ""); err != nil {
		return fmt.Errorf("make %s read-only: %w", m.Target, err)
	}
	return nil
}

func ensureTarget(target string, file bool) error {
	if _, err := os.Stat(target); err == nil || !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if !file {
		if err := os.MkdirAll(target, 0o755); err != nil {
			return fmt.Errorf("mount point %s: %w", target, err)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return fmt.Errorf("mount point %s: %w", target, err)
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("mount point %s: %w", target, err)
	}
	return f.Close()
}

// confined makes target (a directory, or an empty file) inside dir and
// returns a name for it that no symlink can redirect: the /proc/self/fd
// entry of a descriptor opened through os.Root, which refuses any path
// that leaves dir. done closes the descriptor.
func confined(dir, target string, file bool) (path string, done func(), err error) {
	rel, err := filepath.Rel(dir, target)
	if err != nil || rel == "." || !inside(dir, target) {
		return "", nil, fmt.Errorf("mount point %s is not inside %s", target, dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", nil, fmt.Errorf("mount point %s: %w", target, err)
	}
	defer root.Close()
	parent := rel
	if file {
		parent = filepath.Dir(rel)
	}
	if parent != "." {
		if err := root.MkdirAll(parent, 0o755); err != nil {
			return "", nil, fmt.Errorf("mount point %s: %w", target, err)
		}
	}
	if file {
		f, err := root.OpenFile(rel, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return "", nil, fmt.Errorf("mount point %s: %w", target, err)
		}
		_ = f.Close()
	}
	f, err := root.OpenFile(rel, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", nil, fmt.Errorf("mount point %s: %w", target, err)
	}
	return "/proc/self/fd/" + strconv.Itoa(int(f.Fd())), func() { _ = f.Close() }, nil
}
