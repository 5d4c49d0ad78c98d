package leftovers

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/host/state"
)

const (
	mine   = "11111111-1111-4111-8111-111111111111"
	gone   = "22222222-2222-4222-8222-222222222222"
	live   = "33333333-3333-4333-8333-333333333333"
	linked = "44444444-4444-4444-8444-444444444444"
)

// SocketDirs removes the directories of allocations the agent has no
// record of when nothing listens in them, keeps its own and any with a
// live socket (another agent's, on a shared socket_dir), and follows no
// link planted in the root.
func TestSocketDirs(t *testing.T) {
	root := t.TempDir()
	for _, id := range []string{mine, gone, live} {
		if err := os.MkdirAll(filepath.Join(root, id, "t0"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// A dead socket in the gone allocation's task directory.
	l, err := net.Listen("unix", filepath.Join(root, gone, "t0", "csi.sock"))
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	// A live one in another agent's.
	ll, err := net.Listen("unix", filepath.Join(root, live, "t0", "csi.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ll.Close()
	// A link with an allocation's name, to a directory of the host's.
	victim := t.TempDir()
	if err := os.WriteFile(filepath.Join(victim, "keep"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(root, linked)); err != nil {
		t.Fatal(err)
	}

	SocketDirs(root, []*state.AllocState{{Alloc: &state.Alloc{ID: mine}}}, hclog.NewNullLogger())
	for id, want := range map[string]bool{mine: true, gone: false, live: true} {
		if _, err := os.Stat(filepath.Join(root, id)); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", id, err == nil, want)
		}
	}
	if _, err := os.Stat(filepath.Join(victim, "keep")); err != nil {
		t.Errorf("the planted link was followed: %v", err)
	}
}

// CheckStateFile refuses an empty or missing state file beside allocation
// directories, naming what to do, and accepts a new data dir.
func TestCheckStateFile(t *testing.T) {
	dir := t.TempDir()
	if err := CheckStateFile(dir, "state.db"); err != nil {
		t.Fatalf("a new data dir: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "alloc", mine), 0o700); err != nil {
		t.Fatal(err)
	}
	err := CheckStateFile(dir, "state.db")
	if err == nil || !strings.Contains(err.Error(), "is missing") || !strings.Contains(err.Error(), "1 allocation directories") {
		t.Fatalf("missing state beside an allocation: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "state.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CheckStateFile(dir, "state.db"); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Fatalf("empty state beside an allocation: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "state.db"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CheckStateFile(dir, "state.db"); err != nil {
		t.Fatalf("a state file: %v", err)
	}
}
