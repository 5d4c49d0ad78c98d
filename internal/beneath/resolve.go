package beneath

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// resolveFlags is every openat2 resolution of this package: beneath the
// directory, through no symbolic link (magic links of /proc included).
const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// elems checks rel and returns its elements; "." is the directory itself
// (no elements). Absolute paths, "..", empty elements and NUL are refused
// before any system call: RESOLVE_BENEATH would refuse an escape too, but
// the fallback walk relies on this check, and a caller that builds such a
// path has a bug worth a clear error.
func elems(rel string) ([]string, error) {
	if rel == "." {
		return nil, nil
	}
	if rel == "" || strings.HasPrefix(rel, "/") || path.Clean(rel) != rel || strings.ContainsRune(rel, 0) {
		return nil, fmt.Errorf("%q: %w", rel, ErrBadPath)
	}
	es := strings.Split(rel, "/")
	for _, e := range es {
		if e == ".." {
			return nil, fmt.Errorf("%q: %w", rel, ErrBadPath)
		}
	}
	return es, nil
}

// openat opens rel beneath the directory dirfd with flags (O_CLOEXEC is
// added), following no link. walk selects the element-by-element fallback
// for kernels without openat2. A link met on the way is reported as an
// *UnsafeError naming it (name is the directory's name, for messages).
func openat(dirfd int, name, rel string, flags int, mode uint32, walk bool) (int, error) {
	es, err := elems(rel)
	if err != nil {
		return -1, err
	}
	if len(es) == 0 {
		rel = "."
	}
	var fd int
	if walk {
		fd, err = walkOpen(dirfd, es, flags, mode)
	} else {
		fd, err = unix.Openat2(dirfd, rel, &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Mode: uint64(mode), Resolve: resolveFlags})
	}
	if err == nil {
		return fd, nil
	}
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV), errors.Is(err, unix.ENOTDIR):
		// Which element? Only worth the system calls on a refusal.
		if ue := findUnsafe(dirfd, name, es); ue != nil {
			return -1, ue
		}
	}
	return -1, pathError("open", join(name, rel), err)
}

// walkOpen is openat2's resolution done one element at a time: every
// directory on the way is opened O_NOFOLLOW relative to the previous one,
// and the last element too, so a link anywhere fails with ELOOP (or, for
// O_PATH, opens the link itself, which the caller's type check refuses).
func walkOpen(dirfd int, es []string, flags int, mode uint32) (int, error) {
	if len(es) == 0 {
		return unix.Openat(dirfd, ".", flags|unix.O_CLOEXEC, mode)
	}
	cur := dirfd
	closeCur := func() {
		if cur != dirfd {
			_ = unix.Close(cur)
		}
	}
	for _, e := range es[:len(es)-1] {
		next, err := unix.Openat(cur, e, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		closeCur()
		if err != nil {
			return -1, err
		}
		cur = next
	}
	fd, err := unix.Openat(cur, es[len(es)-1], flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	closeCur()
	return fd, err
}

// findUnsafe walks es from dirfd with lstat and returns the first element
// that is a link, or an intermediate one that is not a directory; nil if
// it finds none (the tree changed meanwhile, or the error had another
// cause).
func findUnsafe(dirfd int, name string, es []string) *UnsafeError {
	cur := dirfd
	defer func() {
		if cur != dirfd {
			_ = unix.Close(cur)
		}
	}()
	for i, e := range es {
		var st unix.Stat_t
		if err := unix.Fstatat(cur, e, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return nil
		}
		where := join(name, path.Join(es[:i+1]...))
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return &UnsafeError{Path: where, What: "is a symbolic link"}
		}
		if i == len(es)-1 {
			return nil
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return &UnsafeError{Path: where, What: "is " + kind(st.Mode) + " where a directory belongs"}
		}
		next, err := unix.Openat(cur, e, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil
		}
		if cur != dirfd {
			_ = unix.Close(cur)
		}
		cur = next
	}
	return nil
}

// kind names a file type for messages, with its article.
func kind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "a regular file"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFLNK:
		return "a symbolic link"
	case unix.S_IFIFO:
		return "a named pipe"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	}
	return fmt.Sprintf("a file of type %#o", mode&unix.S_IFMT)
}

// checkKind refuses an opened entry of another type than want (an S_IFMT
// value), and a regular file or socket with more than one link.
func checkKind(fd int, where string, want uint32) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return pathError("stat", where, err)
	}
	if got := st.Mode & unix.S_IFMT; got != want {
		return &UnsafeError{Path: where, What: "is " + kind(st.Mode) + ", not " + kind(want)}
	}
	if want != unix.S_IFDIR && st.Nlink > 1 {
		return &UnsafeError{Path: where, What: fmt.Sprintf("has %d hard links (another name of it may lie outside the directory)", st.Nlink)}
	}
	return nil
}

func join(name, rel string) string {
	if rel == "." || rel == "" {
		return name
	}
	return name + "/" + rel
}

// pathError is the error of a failed system call on where.
func pathError(op, where string, err error) error {
	return &fs.PathError{Op: op, Path: where, Err: err}
}
