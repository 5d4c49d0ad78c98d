package nsexec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/pluginhost/pluginhost/internal/beneath"
)

// target is where a mount lands. In a tree a task can write (its task
// directory, its root) it is found beneath tree, through no link, and made
// if missing (see beneath.Dir.MountPoint): mount(2) follows links in its
// target, and a task that planted local/data -> /etc before this launch
// must get a refusal, not a bind made by root over the host's /etc.
// Outside such a tree (a volume target the job author put elsewhere on the
// host) path is used as it is.
type target struct {
	tree *beneath.Dir
	rel  string
	path string
	file bool
}

// in is the target at the absolute path p (the task's view) inside tree.
func in(tree *beneath.Dir, p string, file bool) target {
	return target{tree: tree, rel: relIn(p), file: file}
}

// relIn is absolute p as a path relative to the root it is in.
func relIn(p string) string {
	rel := filepath.Clean(p)[1:]
	if rel == "" {
		return "."
	}
	return rel
}

// resolve returns a name for the target that is valid until done.
func (t target) resolve() (string, func(), error) {
	if t.tree == nil {
		return t.path, func() {}, ensureTarget(t.path, t.file)
	}
	return t.tree.MountPoint(t.rel, t.file)
}

// name is the target for messages.
func (t target) name() string {
	if t.tree == nil {
		return t.path
	}
	return t.tree.Name() + "/" + t.rel
}

// bind mounts source at t; rec takes the mounts below the source along
// (chroot_env's /usr may hold some), a volume is one mount. ro and nodev
// are applied by remounts of the new mount, found again through t (the
// name now ends on it).
func bind(source string, t target, ro, rec, nodev bool) error {
	mp, done, err := t.resolve()
	if err != nil {
		return err
	}
	flags := uintptr(unix.MS_BIND)
	if rec {
		flags |= unix.MS_REC
	}
	err = unix.Mount(source, mp, "", flags, "")
	done()
	if err != nil {
		return fmt.Errorf("bind %s at %s: %w", source, t.name(), err)
	}
	if !ro && !nodev {
		return nil
	}
	mp, done, err = t.resolve()
	if err != nil {
		return err
	}
	defer done()
	if ro {
		if err := readOnly(mp, t.name(), rec); err != nil {
			return err
		}
	}
	if nodev {
		return noDev(mp)
	}
	return nil
}

// readOnly makes the new mount at mp read-only.
func readOnly(mp, name string, rec bool) error {
	if rec {
		// A remount reaches the top mount only: the mounts below a
		// chroot_env directory that came along would stay writable.
		// mount_setattr is Linux 5.12; older kernels get the top
		// mount read-only, as before it.
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
		err := unix.MountSetattr(-1, mp, unix.AT_RECURSIVE, &attr)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.ENOSYS) {
			return fmt.Errorf("make %s read-only: %w", name, err)
		}
	}
	// A bind mount takes the read-only flag only on a remount.
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
	if err := remount(mp, flags); err != nil {
		return fmt.Errorf("make %s read-only: %w", name, err)
	}
	return nil
}

// remount changes the flags of the mount at mp to flags plus the nosuid,
// noexec and nodev it already has: a bind remount sets these flags to
// what it is given, and one that was nosuid (the agent's allocation tree
// is) must stay so.
func remount(mp string, flags uintptr) error {
	var st unix.Statfs_t
	if err := unix.Statfs(mp, &st); err != nil {
		return err
	}
	for _, f := range [...]struct {
		st int64
		ms uintptr
	}{{unix.ST_RDONLY, unix.MS_RDONLY}, {unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NOEXEC, unix.MS_NOEXEC}, {unix.ST_NODEV, unix.MS_NODEV}} {
		if st.Flags&f.st != 0 {
			flags |= f.ms
		}
	}
	return unix.Mount("", mp, "", flags, "")
}

// ensureTarget makes a mount point outside any task-writable tree.
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
