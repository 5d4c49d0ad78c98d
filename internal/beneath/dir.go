package beneath

import (
	"errors"
	"fmt"
	"os"
	"path"

	"golang.org/x/sys/unix"
)

// Dir is an open directory. Its methods act beneath it and follow no link.
// A Dir is safe for concurrent use; Close it when done.
type Dir struct {
	f    *os.File
	name string
	// walk is set where the kernel has no openat2 (Linux < 5.6).
	walk bool
}

// Open opens the directory at path, the top of a tree whose contents are
// not trusted. The path itself is the caller's (configuration, the data
// dir): links in it are followed like in any other path the agent is given.
func Open(path string) (*Dir, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, pathError("open", path, err)
	}
	return &Dir{f: os.NewFile(uintptr(fd), path), name: path, walk: !hasOpenat2(fd)}, nil
}

// FromFile adopts f, an open directory (a descriptor another process
// passed on), as a Dir named name. The Dir owns f from then on.
func FromFile(f *os.File, name string) (*Dir, error) {
	if err := checkKind(int(f.Fd()), name, unix.S_IFDIR); err != nil {
		return nil, err
	}
	return &Dir{f: f, name: name, walk: !hasOpenat2(int(f.Fd()))}, nil
}

// hasOpenat2 tells whether the kernel has openat2: ENOSYS is the only
// answer that means no.
func hasOpenat2(dirfd int) bool {
	fd, err := unix.Openat2(dirfd, ".", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC})
	if err == nil {
		_ = unix.Close(fd)
		return true
	}
	return !errors.Is(err, unix.ENOSYS)
}

// Name is the directory's path as the agent sees it (for messages).
func (d *Dir) Name() string { return d.name }

// File is the directory's descriptor, to hand to a child process
// (exec.Cmd.ExtraFiles). It stays owned by d.
func (d *Dir) File() *os.File { return d.f }

// Close closes the directory.
func (d *Dir) Close() error { return d.f.Close() }

func (d *Dir) fd() int { return int(d.f.Fd()) }

func (d *Dir) child(fd int, rel string) *Dir {
	name := join(d.name, rel)
	return &Dir{f: os.NewFile(uintptr(fd), name), name: name, walk: d.walk}
}

// OpenDir opens the directory rel beneath d.
func (d *Dir) OpenDir(rel string) (*Dir, error) {
	fd, err := openat(d.fd(), d.name, rel, unix.O_RDONLY|unix.O_DIRECTORY, 0, d.walk)
	if err != nil {
		return nil, err
	}
	if err := checkKind(fd, join(d.name, rel), unix.S_IFDIR); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return d.child(fd, rel), nil
}

// MkdirAll makes the directory rel and any missing parents beneath d and
// returns it opened. Directories it creates get exactly perm, whatever the
// umask; existing ones are left as they are (Chmod the result to be sure
// of its mode). An element that exists as anything but a directory, a
// link to one included, is refused.
func (d *Dir) MkdirAll(rel string, perm os.FileMode) (*Dir, error) {
	if _, err := unixMode(perm); err != nil {
		return nil, err
	}
	es, err := elems(rel)
	if err != nil {
		return nil, err
	}
	cur, err := d.OpenDir(".")
	if err != nil {
		return nil, err
	}
	for _, e := range es {
		next, _, err := cur.Mkdir(e, perm)
		_ = cur.Close()
		if err != nil {
			return nil, err
		}
		cur = next
	}
	return cur, nil
}

// Mkdir makes the directory name (one element) in d if it is missing, with
// exactly perm whatever the umask, and returns it opened; created says
// whether it was made now. An entry of that name that is not a directory,
// a link to one included, is refused.
func (d *Dir) Mkdir(name string, perm os.FileMode) (sub *Dir, created bool, err error) {
	mode, err := unixMode(perm)
	if err != nil {
		return nil, false, err
	}
	if es, err := elems(name); err != nil || len(es) != 1 {
		return nil, false, fmt.Errorf("%q is not one path element: %w", name, ErrBadPath)
	}
	switch err := unix.Mkdirat(d.fd(), name, mode); {
	case err == nil:
		created = true
	case !errors.Is(err, unix.EEXIST):
		return nil, false, pathError("mkdir", join(d.name, name), err)
	}
	sub, err = d.OpenDir(name)
	if err != nil {
		return nil, false, err
	}
	if created {
		// mkdirat honoured the umask and cannot set the sticky or
		// setgid bit.
		if err := sub.Chmod(perm); err != nil {
			_ = sub.Close()
			return nil, false, err
		}
	}
	return sub, created, nil
}

// Chmod sets the directory's own mode, through its descriptor.
func (d *Dir) Chmod(perm os.FileMode) error {
	mode, err := unixMode(perm)
	if err != nil {
		return err
	}
	if err := unix.Fchmod(d.fd(), mode); err != nil {
		return pathError("chmod", d.name, err)
	}
	return nil
}

// Chown sets the directory's own owner and group, through its descriptor.
func (d *Dir) Chown(uid, gid int) error {
	if err := unix.Fchown(d.fd(), uid, gid); err != nil {
		return pathError("chown", d.name, err)
	}
	return nil
}

// Stat is fstat of the directory.
func (d *Dir) Stat() (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd(), &st); err != nil {
		return st, pathError("stat", d.name, err)
	}
	return st, nil
}

// unixMode converts perm, with os.ModeSetuid, os.ModeSetgid and
// os.ModeSticky, to the kernel's mode bits. Raw 0o7000 bits in perm are a
// caller's mistake (os.Chmod would drop them silently) and an error here.
func unixMode(perm os.FileMode) (uint32, error) {
	if perm&0o7000 != 0 || perm&^(os.ModePerm|os.ModeSetuid|os.ModeSetgid|os.ModeSticky) != 0 {
		return 0, fmt.Errorf("mode %#o (%v): give special bits as os.ModeSticky, os.ModeSetgid or os.ModeSetuid", uint32(perm), perm)
	}
	m := uint32(perm.Perm())
	for _, b := range specialBits {
		if perm&b.os != 0 {
			m |= b.unix
		}
	}
	return m, nil
}

// specialBits pairs os.FileMode's special bits with the kernel's.
var specialBits = [...]struct {
	os   os.FileMode
	unix uint32
}{{os.ModeSetuid, unix.S_ISUID}, {os.ModeSetgid, unix.S_ISGID}, {os.ModeSticky, unix.S_ISVTX}}

// parent opens the directory holding rel and returns it with rel's last
// element, which must be a plain name.
func (d *Dir) parent(rel string) (*Dir, string, error) {
	es, err := elems(rel)
	if err != nil {
		return nil, "", err
	}
	if len(es) == 0 {
		return nil, "", fmt.Errorf("%q names the directory itself: %w", rel, ErrBadPath)
	}
	p, err := d.OpenDir(path.Dir(rel))
	if err != nil {
		return nil, "", err
	}
	return p, es[len(es)-1], nil
}

// FileMode is the os.FileMode of a kernel mode's permission and special
// bits (its type bits are dropped), the inverse of what Chmod takes.
func FileMode(mode uint32) os.FileMode {
	m := os.FileMode(mode & 0o777)
	for _, b := range specialBits {
		if mode&b.unix != 0 {
			m |= b.os
		}
	}
	return m
}

// ProcPath is /proc/self/fd/N of the directory's descriptor: a name that
// reaches exactly this directory, in this process, as long as d is open
// (a mount source or target, say).
func (d *Dir) ProcPath() string { return fdPath(d.fd()) }
