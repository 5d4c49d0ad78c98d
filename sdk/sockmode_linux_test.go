//go:build linux && !portable

package sdk

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// The endpoint's chmod goes to the socket just bound and nowhere else: a
// link or a second name planted at the endpoint's name is refused and
// what it points at keeps its mode.
func TestChmodSocketFollowsNoLink(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "csi.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := chmodSocket(sock, 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v %v, want 0600", fi.Mode(), err)
	}
	victim := filepath.Join(dir, "passwd")
	if err := os.WriteFile(victim, []byte("root:x:0:0::/root:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "planted.sock")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.sock")
	if err := os.Link(victim, hard); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, hard} {
		if err := chmodSocket(p, 0o600); err == nil {
			t.Errorf("chmodSocket(%s) followed it", p)
		}
	}
	if fi, _ := os.Stat(victim); fi.Mode().Perm() != 0o644 {
		t.Fatalf("the planted target is now %v", fi.Mode())
	}
}
