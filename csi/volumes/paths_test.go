package volumes

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pluginhost/pluginhost/internal/beneath"
)

// A node plugin task writes in its staging directory: a link it put where
// the agent makes a staging path or a target's parent is refused (the
// agent is root), and removing the emptied paths never goes through one.
func TestStagingPathsBeneathMountRoot(t *testing.T) {
	root := t.TempDir()
	host := t.TempDir()
	vm := &VolumeManager{cfg: VolumeManagerConfig{MountRoot: root}}
	base := filepath.Join(root, "csi-node", "p")
	if err := os.MkdirAll(base, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(host, filepath.Join(base, "staging")); err != nil {
		t.Fatal(err)
	}
	err := vm.mkdirAll(filepath.Join(base, "staging", "vol", "rw-file-system-single-node-writer"))
	if !errors.Is(err, beneath.ErrUnsafe) {
		t.Fatalf("mkdir through a planted link: %v", err)
	}
	if ents, _ := os.ReadDir(host); len(ents) != 0 {
		t.Fatalf("made %v in the host directory", ents)
	}
	// An empty directory of the host, reachable through the link, stays.
	if err := os.Mkdir(filepath.Join(host, "vol"), 0o700); err != nil {
		t.Fatal(err)
	}
	vm.removeEmpty(filepath.Join(base, "staging", "vol"), base)
	if _, err := os.Stat(filepath.Join(host, "vol")); err != nil {
		t.Fatalf("removed a host directory through the link: %v", err)
	}
	// Without links it works as before.
	target := filepath.Join(base, "per-alloc", "a", "vol", "usage")
	if err := vm.mkdirAll(filepath.Dir(target)); err != nil {
		t.Fatal(err)
	}
	vm.removeEmpty(filepath.Dir(target), base)
	if _, err := os.Stat(filepath.Join(base, "per-alloc")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("emptied paths left: %v", err)
	}
}
