package mountinfo

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/plain`: "/plain", `/tab\011x`: "/tab\tx", `/bad\9`: `/bad\9`, `/a\134d\`: `/a\d\`} {
		if got := Unescape(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

// A bind mount (with a space in its path) is listed, deepest first, and
// detached.
func TestUnderAndDetach(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	dir := t.TempDir()
	outer, inner := filepath.Join(dir, "a b"), filepath.Join(dir, "a b", "c")
	if err := os.MkdirAll(inner, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = DetachUnder(dir) })
	for _, mp := range []string{outer, inner} {
		if err := unix.Mount(mp, mp, "", unix.MS_BIND, ""); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Under(Self, dir)
	if err != nil || !slices.Equal(got, []string{inner, outer}) {
		t.Fatalf("Under = %q, %v; want the inner mount, then the outer", got, err)
	}
	if ok, err := IsMountPoint(outer); !ok || err != nil {
		t.Fatalf("IsMountPoint(%q) = %t, %v", outer, ok, err)
	}
	if err := DetachUnder(dir); err != nil {
		t.Fatal(err)
	}
	if got, err := Under(Self, dir); err != nil || len(got) != 0 {
		t.Fatalf("after DetachUnder: %q, %v", got, err)
	}
}
