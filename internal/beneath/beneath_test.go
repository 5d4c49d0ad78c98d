package beneath

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// world is a tree the "task" controls (root) next to host files it must
// never reach (outside): a secret file, a directory, and what each looked
// like before the test.
type world struct {
	root, outside string
	secret        string // a file outside
	hostDir       string // a directory outside
}

func newWorld(t *testing.T) *world {
	t.Helper()
	base := t.TempDir()
	w := &world{root: filepath.Join(base, "tree"), outside: filepath.Join(base, "host")}
	w.secret = filepath.Join(w.outside, "secret")
	w.hostDir = filepath.Join(w.outside, "etc")
	for _, d := range []string{w.root, w.hostDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(w.secret, []byte("root only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(w.root, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	return w
}

// unchanged fails if anything outside the tree changed: the secret's
// content and mode, and the host directory's mode, owner and contents.
func (w *world) unchanged(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(w.secret)
	if err != nil || string(b) != "root only\n" {
		t.Errorf("secret now %q (%v)", b, err)
	}
	if fi, err := os.Stat(w.secret); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("secret mode now %v (%v)", fi.Mode(), err)
	}
	fi, err := os.Stat(w.hostDir)
	if err != nil || fi.Mode().Perm() != 0o700 || fi.Sys().(*syscall.Stat_t).Uid != uint32(os.Getuid()) {
		t.Errorf("host dir now %v (%v)", fi.Mode(), err)
	}
	ents, _ := os.ReadDir(w.hostDir)
	if len(ents) != 0 {
		t.Errorf("something was created in the host dir: %v", ents)
	}
	ents, _ = os.ReadDir(w.outside)
	if len(ents) != 2 {
		t.Errorf("something was created next to the tree: %v", ents)
	}
}

// resolvers runs f with openat2 and with the element-by-element walk.
func resolvers(t *testing.T, f func(t *testing.T, open func(string) *Dir)) {
	for _, walk := range []bool{false, true} {
		name := "openat2"
		if walk {
			name = "walk"
		}
		t.Run(name, func(t *testing.T) {
			f(t, func(p string) *Dir {
				d, err := Open(p)
				if err != nil {
					t.Fatal(err)
				}
				d.walk = walk
				t.Cleanup(func() { _ = d.Close() })
				return d
			})
		})
	}
}

// plantings are what a task leaves where the agent will look; each is
// made at the path "logs/t.stdout.0" (or its parent "logs") in the tree.
var plantings = []struct {
	name string
	// plant makes it; at is where the refusal must point (relative to the
	// tree).
	plant func(t *testing.T, w *world)
	at    string
}{
	{"file link", func(t *testing.T, w *world) { symlink(t, w.secret, w.path("logs/t.stdout.0")) }, "logs/t.stdout.0"},
	{"dangling link", func(t *testing.T, w *world) {
		symlink(t, filepath.Join(w.hostDir, "new"), w.path("logs/t.stdout.0"))
	}, "logs/t.stdout.0"},
	{"relative link within", func(t *testing.T, w *world) { symlink(t, "../other", w.path("logs/t.stdout.0")) }, "logs/t.stdout.0"},
	{"directory link", func(t *testing.T, w *world) {
		if err := os.Remove(w.path("logs")); err != nil {
			t.Fatal(err)
		}
		symlink(t, w.hostDir, w.path("logs"))
	}, "logs"},
	{"hard link", func(t *testing.T, w *world) {
		if err := os.Link(w.secret, w.path("logs/t.stdout.0")); err != nil {
			t.Fatal(err)
		}
	}, "logs/t.stdout.0"},
	{"named pipe", func(t *testing.T, w *world) {
		if err := unix.Mkfifo(w.path("logs/t.stdout.0"), 0o666); err != nil {
			t.Fatal(err)
		}
	}, "logs/t.stdout.0"},
}

func (w *world) path(rel string) string { return filepath.Join(w.root, rel) }

func symlink(t *testing.T, target, at string) {
	t.Helper()
	if err := os.Symlink(target, at); err != nil {
		t.Fatal(err)
	}
}

// wantUnsafe fails unless err is an *UnsafeError naming at.
func wantUnsafe(t *testing.T, err error, d *Dir, at string) {
	t.Helper()
	var ue *UnsafeError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnsafe) {
		t.Fatalf("got %v, want a refusal of %s", err, at)
	}
	if want := d.Name() + "/" + at; ue.Path != want {
		t.Fatalf("refusal names %q, want %q (%v)", ue.Path, want, err)
	}
}

// Every operation on a planted entry is refused, names the entry, and
// leaves the host alone; with both resolvers.
func TestPlantedEntriesAreRefused(t *testing.T) {
	ops := []struct {
		name string
		do   func(d *Dir) error
		// dirOnly: the operation can only trip over the directory link
		// (it does not look at the file itself).
		dirOnly bool
	}{
		{"append", func(d *Dir) error {
			f, err := d.OpenFile("logs/t.stdout.0", os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
			if err == nil {
				_, _ = f.WriteString("pwned\n")
				_ = f.Close()
			}
			return err
		}, false},
		{"read", func(d *Dir) error {
			f, err := d.OpenFile("logs/t.stdout.0", os.O_RDONLY, 0)
			if err == nil {
				_, _ = io.ReadAll(f)
				_ = f.Close()
			}
			return err
		}, false},
		{"truncate", func(d *Dir) error {
			f, err := d.OpenFile("logs/t.stdout.0", os.O_WRONLY|os.O_TRUNC, 0)
			if err == nil {
				_ = f.Close()
			}
			return err
		}, false},
		{"chmod dir", func(d *Dir) error {
			sub, err := d.OpenDir("logs")
			if err == nil {
				err = sub.Chmod(0o777)
				_ = sub.Close()
			}
			return err
		}, true},
		{"chown dir", func(d *Dir) error {
			sub, err := d.OpenDir("logs")
			if err == nil {
				err = sub.Chown(65534, 65534)
				_ = sub.Close()
			}
			return err
		}, true},
		{"mkdir below", func(d *Dir) error {
			sub, err := d.MkdirAll("logs/sub", 0o700)
			if err == nil {
				_ = sub.Close()
			}
			return err
		}, true},
		{"mount point below", func(d *Dir) error {
			_, done, err := d.MountPoint("logs/mnt", false)
			if err == nil {
				done()
			}
			return err
		}, true},
		{"create below", func(d *Dir) error {
			f, err := d.OpenFile("logs/new", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err == nil {
				_ = f.Close()
			}
			return err
		}, true},
		{"names", func(d *Dir) error { _, err := d.Names("logs"); return err }, true},
	}
	for _, p := range plantings {
		for _, op := range ops {
			dirLink := p.at == "logs"
			if op.dirOnly && !dirLink {
				continue
			}
			t.Run(p.name+"/"+op.name, func(t *testing.T) {
				resolvers(t, func(t *testing.T, open func(string) *Dir) {
					w := newWorld(t)
					p.plant(t, w)
					d := open(w.root)
					wantUnsafe(t, op.do(d), d, p.at)
					w.unchanged(t)
				})
			})
		}
	}
}

// Mounted finds what was just mounted on a file, whatever its kind (a
// block volume shows a device node), and refuses a link there or on the
// way, as every other operation does.
func TestMounted(t *testing.T) {
	resolvers(t, func(t *testing.T, open func(string) *Dir) {
		root := t.TempDir()
		for _, d := range []string{"task/local", "outside"} {
			if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := syscall.Mkfifo(filepath.Join(root, "task/local/fifo"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(root, "outside"), filepath.Join(root, "task/dir")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(root, "task/local/fifo"), filepath.Join(root, "task/local/link")); err != nil {
			t.Fatal(err)
		}
		d := open(filepath.Join(root, "task"))
		p, done, err := d.Mounted("local/fifo")
		if err != nil {
			t.Fatalf("Mounted on a named pipe (a bound device stands so): %v", err)
		}
		done()
		if !strings.HasPrefix(p, "/proc/self/fd/") {
			t.Fatalf("Mounted returned %q", p)
		}
		if _, _, err := d.Mounted("dir/x"); !errors.Is(err, ErrUnsafe) {
			t.Errorf("Mounted through a directory link = %v, want ErrUnsafe", err)
		}
		if _, _, err := d.Mounted("local/link"); !errors.Is(err, ErrUnsafe) {
			t.Errorf("Mounted on a link = %v, want ErrUnsafe", err)
		}
	})
}

// The same tree without plantings works: create, append, read back,
// list, chmod with the sticky and setgid bits, remove.
func TestOrdinaryUse(t *testing.T) {
	resolvers(t, func(t *testing.T, open func(string) *Dir) {
		w := newWorld(t)
		d := open(w.root)
		logs, err := d.MkdirAll("alloc/logs", 0o750|os.ModeSetgid)
		if err != nil {
			t.Fatal(err)
		}
		defer logs.Close()
		fi, err := os.Stat(w.path("alloc/logs"))
		if err != nil || fi.Mode() != os.ModeDir|os.ModeSetgid|0o750 {
			t.Fatalf("made %v (%v), want dg-rwxr-x---", fi.Mode(), err)
		}
		for range 2 {
			f, err := logs.OpenFile("t.stdout.0", os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString("line\n"); err != nil {
				t.Fatal(err)
			}
			_ = f.Close()
		}
		f, err := d.OpenFile("alloc/logs/t.stdout.0", os.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(f)
		_ = f.Close()
		if string(b) != "line\nline\n" {
			t.Fatalf("read back %q", b)
		}
		names, err := d.Names("alloc/logs")
		if err != nil || len(names) != 1 || names[0] != "t.stdout.0" {
			t.Fatalf("names %v (%v)", names, err)
		}
		tmp, err := d.MkdirAll("t/tmp", 0o700)
		if err != nil {
			t.Fatal(err)
		}
		if err := tmp.Chmod(0o777 | os.ModeSticky); err != nil {
			t.Fatal(err)
		}
		_ = tmp.Close()
		if fi, _ := os.Stat(w.path("t/tmp")); fi.Mode() != os.ModeDir|os.ModeSticky|0o777 {
			t.Fatalf("tmp is %v, want sticky 1777", fi.Mode())
		}
		if err := d.Remove("alloc/logs/t.stdout.0"); err != nil {
			t.Fatal(err)
		}
		if err := d.Symlink("/etc", "t/link"); err != nil {
			t.Fatal(err)
		}
		if got, err := d.Readlink("t/link"); err != nil || got != "/etc" {
			t.Fatalf("readlink %q (%v)", got, err)
		}
		st, err := d.Lstat("t/link")
		if err != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
			t.Fatalf("lstat of a link: %#o (%v)", st.Mode, err)
		}
		// Removing a planted link removes the link, not its target.
		if err := d.Remove("t/link"); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat("/etc"); err != nil {
			t.Fatal(err)
		}
		w.unchanged(t)
	})
}

// Raw special bits are refused rather than dropped, as os.Chmod drops
// them (os.Chmod(p, 0o1777) makes 0777).
func TestRawSpecialBitsRefused(t *testing.T) {
	w := newWorld(t)
	d, err := Open(w.root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Chmod(0o1777); err == nil {
		t.Fatal("Chmod(0o1777) accepted")
	}
	if _, err := d.MkdirAll("x", 0o2770); err == nil {
		t.Fatal("MkdirAll(0o2770) accepted")
	}
}

// Paths that leave the directory lexically are a caller's bug.
func TestBadPaths(t *testing.T) {
	w := newWorld(t)
	d, err := Open(w.root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, p := range []string{"", "/etc", "../host/secret", "logs/../../host", "logs/", "logs//x", "./logs", "a\x00b"} {
		if _, err := d.OpenFile(p, os.O_RDONLY, 0); !errors.Is(err, ErrBadPath) {
			t.Errorf("OpenFile(%q): %v, want ErrBadPath", p, err)
		}
	}
	w.unchanged(t)
}

// A planted link to a directory, reached through MountPoint for a file,
// never creates anything outside.
func TestMountPointFile(t *testing.T) {
	resolvers(t, func(t *testing.T, open func(string) *Dir) {
		w := newWorld(t)
		d := open(w.root)
		p, done, err := d.MountPoint("dev/null", true)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		done()
		if err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("mount point %v (%v)", fi, err)
		}
		symlink(t, w.hostDir, w.path("dev2"))
		_, _, err = d.MountPoint("dev2/null", true)
		wantUnsafe(t, err, d, "dev2")
		w.unchanged(t)
	})
}

// DialUnix reaches the socket beneath the directory, reports its peer's
// credentials, and refuses a link to another socket.
func TestDialUnix(t *testing.T) {
	resolvers(t, func(t *testing.T, open func(string) *Dir) {
		w := newWorld(t)
		other := filepath.Join(w.outside, "other.sock")
		l, err := net.Listen("unix", w.path("logs/p.sock"))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		lo, err := net.Listen("unix", other)
		if err != nil {
			t.Fatal(err)
		}
		defer lo.Close()
		d := open(w.root)
		c, err := d.DialUnix(context.Background(), "logs/p.sock")
		if err != nil {
			t.Fatal(err)
		}
		cred, err := PeerCred(c)
		_ = c.Close()
		if err != nil || int(cred.Pid) != os.Getpid() {
			t.Fatalf("peer %+v (%v)", cred, err)
		}
		symlink(t, other, w.path("logs/q.sock"))
		_, err = d.DialUnix(context.Background(), "logs/q.sock")
		wantUnsafe(t, err, d, "logs/q.sock")
		if err := os.Link(other, w.path("logs/r.sock")); err != nil {
			t.Fatal(err)
		}
		_, err = d.DialUnix(context.Background(), "logs/r.sock")
		wantUnsafe(t, err, d, "logs/r.sock")
		if err := os.WriteFile(w.path("logs/plain"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err = d.DialUnix(context.Background(), "logs/plain")
		wantUnsafe(t, err, d, "logs/plain")
	})
}

// A missing entry is fs.ErrNotExist, not a refusal.
func TestMissingIsNotExist(t *testing.T) {
	resolvers(t, func(t *testing.T, open func(string) *Dir) {
		d := open(newWorld(t).root)
		_, err := d.OpenFile("logs/none", os.O_RDONLY, 0)
		if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrUnsafe) {
			t.Fatalf("got %v", err)
		}
		if _, err := d.OpenDir("nodir/x"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("got %v", err)
		}
		if !strings.Contains(err.Error(), "logs/none") {
			t.Fatalf("error does not name the path: %v", err)
		}
	})
}

// DialPath reaches a socket served by its owner, refuses one whose file
// another user owns, links below a root, and a final link anywhere.
func TestDialPath(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	w := newWorld(t)
	ctx := context.Background()
	good := w.path("logs/p.sock")
	l, err := net.Listen("unix", good)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, cred, err := DialPath(ctx, good, []string{w.root})
	if err != nil || int(cred.Pid) != os.Getpid() {
		t.Fatalf("dial %v (%v)", cred, err)
	}
	_ = c.Close()
	// Outside every root: the parent is taken as it is.
	if c, _, err = DialPath(ctx, good, nil); err != nil {
		t.Fatalf("dial outside the roots: %v", err)
	}
	_ = c.Close()
	// A file owned by someone else than the process serving it.
	other := w.path("logs/q.sock")
	lo, err := net.Listen("unix", other)
	if err != nil {
		t.Fatal(err)
	}
	defer lo.Close()
	if err := os.Chown(other, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, _, err := DialPath(ctx, other, []string{w.root}); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "served by a process of uid 0") {
		t.Fatalf("mismatched owner: %v", err)
	}
	// A link to a socket, at the end or on the way, below a root; and at
	// the end outside the roots.
	symlink(t, good, w.path("link.sock"))
	if err := os.Rename(w.path("logs"), w.path("logs2")); err != nil {
		t.Fatal(err)
	}
	symlink(t, w.path("logs2"), w.path("logs"))
	for _, c := range []struct {
		path  string
		roots []string
	}{{w.path("link.sock"), []string{w.root}}, {w.path("logs/p.sock"), []string{w.root}}, {w.path("link.sock"), nil}} {
		if _, _, err := DialPath(ctx, c.path, c.roots); !errors.Is(err, ErrUnsafe) {
			t.Errorf("DialPath(%s, %v) = %v, want a refusal", c.path, c.roots, err)
		}
	}
}
