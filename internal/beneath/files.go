package beneath

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// OpenFile opens the regular file rel beneath d, as os.OpenFile would,
// and refuses anything else: a link, a named pipe, a device, a socket, a
// directory, or a regular file with more than one link.
//
// With O_CREATE, a file that does not exist is created with perm (the
// umask applies), exclusively: nothing a task made can be opened on the
// way. An existing entry is first opened as a path only (O_PATH, which
// has no side effects, whereas opening a device or a pipe may), checked,
// and then reopened with flag through the descriptor itself.
func (d *Dir) OpenFile(rel string, flag int, perm os.FileMode) (*os.File, error) {
	mode, err := unixMode(perm)
	if err != nil {
		return nil, err
	}
	where := join(d.name, rel)
	if flag&os.O_CREATE != 0 {
		fd, err := openat(d.fd(), d.name, rel, flag|unix.O_EXCL, mode, d.walk)
		if err == nil {
			return os.NewFile(uintptr(fd), where), nil
		}
		if !errors.Is(err, unix.EEXIST) || flag&os.O_EXCL != 0 {
			return nil, err
		}
		flag &^= os.O_CREATE
	}
	pfd, err := openat(d.fd(), d.name, rel, unix.O_PATH, 0, d.walk)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	if err := checkKind(pfd, where, unix.S_IFREG); err != nil {
		return nil, err
	}
	fd, err := unix.Open(fdPath(pfd), flag|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, pathError("open", where, err)
	}
	return os.NewFile(uintptr(fd), where), nil
}

// fdPath is the /proc name of an open descriptor: opening or connecting
// through it reaches the very inode the descriptor holds.
func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// Lstat is lstat of rel beneath d: a link is reported, not followed.
func (d *Dir) Lstat(rel string) (unix.Stat_t, error) {
	var st unix.Stat_t
	p, name, err := d.parent(rel)
	if err != nil {
		return st, err
	}
	defer p.Close()
	if err := unix.Fstatat(p.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return st, pathError("lstat", join(d.name, rel), err)
	}
	return st, nil
}

// Names lists the entries of the directory rel beneath d ("." for d).
func (d *Dir) Names(rel string) ([]string, error) {
	sub, err := d.OpenDir(rel)
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	names, err := sub.f.Readdirnames(-1)
	if err != nil {
		return nil, pathError("readdir", sub.name, err)
	}
	return names, nil
}

// Remove removes the entry rel beneath d: a file, a link (not what it
// points at) or an empty directory.
func (d *Dir) Remove(rel string) error {
	p, name, err := d.parent(rel)
	if err != nil {
		return err
	}
	defer p.Close()
	err = unix.Unlinkat(p.fd(), name, 0)
	if errors.Is(err, unix.EISDIR) {
		err = unix.Unlinkat(p.fd(), name, unix.AT_REMOVEDIR)
	}
	if err != nil {
		return pathError("remove", join(d.name, rel), err)
	}
	return nil
}

// Symlink makes rel beneath d a symbolic link to target. Making a link is
// safe; following one is what this package never does.
func (d *Dir) Symlink(target, rel string) error {
	p, name, err := d.parent(rel)
	if err != nil {
		return err
	}
	defer p.Close()
	if err := unix.Symlinkat(target, p.fd(), name); err != nil {
		return pathError("symlink", join(d.name, rel), err)
	}
	return nil
}

// Readlink reads the link rel beneath d.
func (d *Dir) Readlink(rel string) (string, error) {
	p, name, err := d.parent(rel)
	if err != nil {
		return "", err
	}
	defer p.Close()
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(p.fd(), name, buf)
	if err != nil {
		return "", pathError("readlink", join(d.name, rel), err)
	}
	return string(buf[:n]), nil
}

// MountPoint returns a path by which the kernel reaches exactly the
// directory (file false) or regular file (file true) rel beneath d,
// creating it if missing (a directory with its parents 0755, a file
// empty and 0644), for a mount to land on: mount(2) follows links in
// its target, and a task that swapped the target for a link would get
// the mount elsewhere. The path is /proc/self/fd/N of a descriptor that
// done closes; it is valid until then, in this process.
func (d *Dir) MountPoint(rel string, file bool) (path string, done func(), err error) {
	if !file {
		sub, err := d.MkdirAll(rel, 0o755)
		if err != nil {
			return "", nil, err
		}
		return fdPath(sub.fd()), func() { _ = sub.Close() }, nil
	}
	dir, name, err := splitLast(rel)
	if err != nil {
		return "", nil, err
	}
	p, err := d.MkdirAll(dir, 0o755)
	if err != nil {
		return "", nil, err
	}
	f, err := p.OpenFile(name, os.O_RDONLY|os.O_CREATE, 0o644)
	_ = p.Close()
	if err != nil {
		return "", nil, err
	}
	return fdPath(int(f.Fd())), func() { _ = f.Close() }, nil
}

// Mounted returns a path by which the kernel reaches what is mounted on
// rel beneath d, for a remount right after a bind onto MountPoint: a
// file's mount point shows the kind of what was bound on it (a device
// node, for a block volume), which MountPoint would refuse. Links are
// refused as everywhere; done closes the descriptor the path names.
func (d *Dir) Mounted(rel string) (path string, done func(), err error) {
	fd, err := openat(d.fd(), d.name, rel, unix.O_PATH, 0, d.walk)
	if err != nil {
		return "", nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return "", nil, pathError("stat", join(d.name, rel), err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		// The fallback walk opens a last link itself (O_PATH|O_NOFOLLOW).
		_ = unix.Close(fd)
		return "", nil, &UnsafeError{Path: join(d.name, rel), What: "is a symbolic link"}
	}
	return fdPath(fd), func() { _ = unix.Close(fd) }, nil
}

// splitLast splits rel into its parent ("." for none) and last element.
func splitLast(rel string) (dir, name string, err error) {
	es, err := elems(rel)
	if err != nil {
		return "", "", err
	}
	if len(es) == 0 {
		return "", "", fmt.Errorf("%q names the directory itself: %w", rel, ErrBadPath)
	}
	if len(es) == 1 {
		return ".", es[0], nil
	}
	return strings.Join(es[:len(es)-1], "/"), es[len(es)-1], nil
}
