package beneath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// FuzzResolve feeds arbitrary paths to OpenFile and OpenDir over a tree
// full of links (to a host file, to a host directory, a relative one
// within, a loop, a dangling one) and checks the package's promise for
// whatever comes back: an error, or a descriptor of an inode inside the
// tree reached through no link at all.
func FuzzResolve(f *testing.F) {
	base := f.TempDir()
	root := filepath.Join(base, "tree")
	host := filepath.Join(base, "host")
	for _, d := range []string{root + "/logs", root + "/a/b", host} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	for _, p := range []string{root + "/logs/t.stdout.0", root + "/a/b/c", host + "/secret"} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"link": host + "/secret", "dirlink": host, "within": "logs", "loop": "loop",
		"a/dangling": host + "/none", "a/b/up": "../../logs",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			f.Fatal(err)
		}
	}
	if err := os.Link(host+"/secret", root+"/hard"); err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		"logs/t.stdout.0", "link", "dirlink/secret", "within/t.stdout.0", "loop", "a/dangling", "a/b/up/t.stdout.0",
		"a/b/c", "hard", "../host/secret", "a/../link", ".", "", "/etc/passwd", "a//b", "logs/", "a/b/c/d",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	d, err := Open(root)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = d.Close() })
	f.Fuzz(func(t *testing.T, rel string, walk bool) {
		dd := *d
		dd.walk = walk
		if fh, err := dd.OpenFile(rel, os.O_RDONLY, 0); err == nil {
			check(t, root, rel, int(fh.Fd()))
			_ = fh.Close()
		} else {
			expected(t, rel, err)
		}
		if sub, err := dd.OpenDir(rel); err == nil {
			check(t, root, rel, sub.fd())
			_ = sub.Close()
		} else {
			expected(t, rel, err)
		}
	})
}

// check fails unless fd is an inode inside root and no element of rel,
// as a path under root, is a link.
func check(t *testing.T, root, rel string, fd int) {
	t.Helper()
	got, err := os.Readlink(fdPath(fd))
	if err != nil {
		t.Fatal(err)
	}
	if got != root && !strings.HasPrefix(got, root+"/") {
		t.Fatalf("%q opened %s, outside %s", rel, got, root)
	}
	p := root
	for _, e := range strings.Split(rel, "/") {
		if e == "." {
			continue
		}
		p = filepath.Join(p, e)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			t.Fatalf("%q was opened through the link %s", rel, p)
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink > 1 {
		t.Fatalf("%q opened a file with %d links", rel, st.Nlink)
	}
}

// expected fails on an error that is none of the package's kinds of no.
func expected(t *testing.T, rel string, err error) {
	t.Helper()
	switch {
	case errors.Is(err, ErrUnsafe), errors.Is(err, ErrBadPath), errors.Is(err, fs.ErrNotExist),
		errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENAMETOOLONG),
		errors.Is(err, unix.EISDIR):
	default:
		t.Fatalf("%q: unexpected error %v", rel, err)
	}
}
