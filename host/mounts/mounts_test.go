package mounts

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pluginhost/pluginhost/internal/mountinfo"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounts need root")
	}
}

// ContainTree makes a tree nosuid,nodev (a setuid file in it does not
// work through the host's path), again without harm; ReleaseTree keeps it
// while anything is in it and removes only its own bind.
func TestContainAndReleaseTree(t *testing.T) {
	needRoot(t)
	dir := filepath.Join(t.TempDir(), "alloc")
	t.Cleanup(func() { _ = mountinfo.DetachUnder(dir) })
	for range 2 {
		if err := ContainTree(dir); err != nil {
			t.Fatal(err)
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Flags&unix.ST_NOSUID == 0 || st.Flags&unix.ST_NODEV == 0 {
		t.Fatalf("%s flags %#x: want nosuid and nodev", dir, st.Flags)
	}
	if err := os.Mkdir(filepath.Join(dir, "a1"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := ReleaseTree(dir); err != nil {
		t.Fatal(err)
	}
	if ok, _ := mountinfo.IsMountPoint(dir); !ok {
		t.Fatal("released while an allocation is in it")
	}
	if err := os.Remove(filepath.Join(dir, "a1")); err != nil {
		t.Fatal(err)
	}
	if err := ReleaseTree(dir); err != nil {
		t.Fatal(err)
	}
	if ok, _ := mountinfo.IsMountPoint(dir); ok {
		t.Fatal("still a mount once empty")
	}
}

// Root is shared once Ensured, and released at a stop only when nothing
// is mounted below it.
func TestRoot(t *testing.T) {
	needRoot(t)
	r := &Root{Dir: filepath.Join(t.TempDir(), "csi")}
	t.Cleanup(func() { _ = mountinfo.DetachUnder(r.Dir) })
	if err := r.Release(); err != nil {
		t.Fatalf("Release before Ensure: %v", err)
	}
	if err := r.Ensure(); err != nil {
		t.Fatal(err)
	}
	if ok, _ := mountinfo.IsMountPoint(r.Dir); !ok {
		t.Fatal("Ensure made no mount")
	}
	vol := filepath.Join(r.Dir, "vol")
	if err := os.Mkdir(vol, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", vol, "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	if err := r.Release(); err != nil {
		t.Fatal(err)
	}
	if ok, _ := mountinfo.IsMountPoint(r.Dir); !ok {
		t.Fatal("released with a volume mounted below")
	}
	if err := unix.Unmount(vol, 0); err != nil {
		t.Fatal(err)
	}
	if err := r.Release(); err != nil {
		t.Fatal(err)
	}
	if ok, _ := mountinfo.IsMountPoint(r.Dir); ok {
		t.Fatal("still mounted with nothing below")
	}
}
