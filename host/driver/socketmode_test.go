package driver

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/pluginhost/pluginhost/internal/beneath"
)

// TightenSocket chmods the plugin's own socket, through its descriptor,
// and refuses a link or a second name the task put there instead (the
// agent is root: a chmod through a link to /etc/shadow would be root's).
func TestTightenSocketRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	l, err := net.Listen("unix", filepath.Join(dir, "p.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := TightenSocket(dir, "p.sock"); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "p.sock")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v", fi.Mode())
	}
	secret := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(secret, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other.sock")
	lo, err := net.Listen("unix", other)
	if err != nil {
		t.Fatal(err)
	}
	defer lo.Close()
	if err := os.Chmod(other, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, plant := range map[string]func(string) error{
		"file link":   func(p string) error { return os.Symlink(secret, p) },
		"socket link": func(p string) error { return os.Symlink(other, p) },
		"hard link":   func(p string) error { return os.Link(other, p) },
	} {
		if err := plant(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		if err := TightenSocket(dir, name); !errors.Is(err, beneath.ErrUnsafe) {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
	}
	for _, p := range []struct {
		path string
		mode os.FileMode
	}{{secret, 0o644}, {other, 0o755}} {
		if fi, _ := os.Stat(p.path); fi.Mode().Perm() != p.mode {
			t.Errorf("%s chmodded through a link to %v", p.path, fi.Mode())
		}
	}
}
