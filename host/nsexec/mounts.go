package nsexec

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/pluginhost/pluginhost/internal/beneath"
)

// target is where a mount lands, found beneath tree through no link and
// made if missing (see beneath.Dir.MountPoint): mount(2) follows links in
// its target, and a task that planted local/data -> /etc before this
// launch must get a refusal, not a bind made by root over the host's /etc.
// tree is the task's root or directory, or, for a volume the job put
// elsewhere on the host, the host's "/" itself: a directory on the way may
// be a task user's (a destination under /tmp), and root must not follow
// that user's link either.
type target struct {
	tree *beneath.Dir
	rel  string
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

// name is the target for messages.
func (t target) name() string {
	if t.tree.Name() == "/" {
		return "/" + t.rel
	}
	return t.tree.Name() + "/" + t.rel
}

// Mount attributes a bind may get on top of the bind itself.
const (
	attrRO     = unix.MS_RDONLY
	attrNoSUID = unix.MS_NOSUID
	attrNoDev  = unix.MS_NODEV
	// attrVolume is every directory volume's: whatever a task put in a
	// volume (a setuid copy of bash, a device node for the host's disk,
	// a file with capabilities) is inert in every other task that mounts
	// it, whatever its driver or user.
	attrVolume = attrNoSUID | attrNoDev
)

// volumeAttrs are the attributes of a task's volume: a block volume is a
// device node the task must open, so it keeps device semantics; it is
// nosuid all the same.
func volumeAttrs(m Mount) uintptr {
	a := uintptr(attrVolume)
	if m.File {
		a = attrNoSUID
	}
	if m.ReadOnly {
		a |= attrRO
	}
	return a
}

// bind mounts source at t; rec takes the mounts below the source along
// (chroot_env's /usr may hold some), a volume is one mount. attrs
// (attrRO, attrNoSUID, attrNoDev) are applied by a remount of the new
// mount, found again through t, beneath its tree, whatever it now is.
func bind(source string, t target, rec bool, attrs uintptr) error {
	mp, done, err := t.tree.MountPoint(t.rel, t.file)
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
	if attrs == 0 {
		return nil
	}
	mp, done, err = t.tree.Mounted(t.rel)
	if err != nil {
		return err
	}
	defer done()
	if err := setAttrs(mp, rec, attrs); err != nil {
		return fmt.Errorf("%s at %s: %w", attrNames(attrs), t.name(), err)
	}
	return nil
}

// setAttrs gives the new mount at mp attrs, keeping what it has.
func setAttrs(mp string, rec bool, attrs uintptr) error {
	if rec {
		// A remount reaches the top mount only: the mounts below a
		// chroot_env directory that came along would keep their flags.
		// mount_setattr is Linux 5.12; older kernels get the top mount
		// only, as before it.
		var attr unix.MountAttr
		for _, f := range [...]struct {
			ms   uintptr
			attr uint64
		}{{attrRO, unix.MOUNT_ATTR_RDONLY}, {attrNoSUID, unix.MOUNT_ATTR_NOSUID}, {attrNoDev, unix.MOUNT_ATTR_NODEV}} {
			if attrs&f.ms != 0 {
				attr.Attr_set |= f.attr
			}
		}
		err := unix.MountSetattr(-1, mp, unix.AT_RECURSIVE, &attr)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.ENOSYS) {
			return err
		}
	}
	// A bind mount takes these flags only on a remount.
	return remount(mp, unix.MS_BIND|unix.MS_REMOUNT|attrs)
}

// attrNames names attrs for messages.
func attrNames(attrs uintptr) string {
	var out []string
	for _, f := range [...]struct {
		ms   uintptr
		name string
	}{{attrRO, "read-only"}, {attrNoSUID, "nosuid"}, {attrNoDev, "nodev"}} {
		if attrs&f.ms != 0 {
			out = append(out, f.name)
		}
	}
	return "make " + strings.Join(out, ",")
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
