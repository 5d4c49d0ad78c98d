package nsexec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// bind mounts m.Source at target (m.Target, or its place inside a root);
// rec takes the mounts below the source along (chroot_env's /usr may hold
// some), a volume is one mount.
func bind(m Mount, target string, rec bool) error {
	if err := ensureTarget(target, m.File); err != nil {
		return err
	}
	flags := uintptr(unix.MS_BIND)
	if rec {
		flags |= unix.MS_REC
	}
	if err := unix.Mount(m.Source, target, "", flags, ""); err != nil {
		return fmt.Errorf("bind %s at %s: %w", m.Source, m.Target, err)
	}
	if m.ReadOnly && rec {
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
	if m.ReadOnly {
		// A bind mount takes the read-only flag only on a remount.
		flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
		if err := unix.Mount("", target, "", flags, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", m.Target, err)
		}
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
