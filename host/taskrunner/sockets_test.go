package taskrunner

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pluginhost/pluginhost/host/config"
	"github.com/pluginhost/pluginhost/internal/beneath"
)

func TestSocketDirShortDataDir(t *testing.T) {
	id := NewUUID()
	d, err := SocketDir("/var/lib/ph", "", id)
	if err != nil {
		t.Fatal(err)
	}
	if d != "/var/lib/ph/sockets/"+id {
		t.Fatalf("socket dir %q", d)
	}
}

func TestSocketDirLongDataDirFallsBack(t *testing.T) {
	long := "/" + strings.Repeat("d", 60)
	id := NewUUID()
	d, err := SocketDir(long, "", id)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(d, long) {
		t.Fatalf("socket dir %q is under the too-long data dir", d)
	}
	if len(d)+SocketBudget > MaxSocketPath {
		t.Fatalf("fallback %q leaves no room for the socket name", d)
	}
	again, _ := SocketDir(long, "", id)
	if again != d {
		t.Fatalf("fallback not deterministic: %q then %q (a restarted agent must find it)", d, again)
	}
	other, _ := SocketDir(long+"x", "", id)
	if other == d {
		t.Fatal("two data dirs share a fallback socket root")
	}
}

func TestSocketDirTooLongIsAClearError(t *testing.T) {
	_, err := SocketDir("/x", "/"+strings.Repeat("o", 80), NewUUID())
	if err == nil || !strings.Contains(err.Error(), "107") || !strings.Contains(err.Error(), "oooo") {
		t.Fatalf("error %v, want one naming the path and the 107-byte limit", err)
	}
}

func TestRemoveStaleSockets(t *testing.T) {
	dir, err := os.MkdirTemp("", "stale")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sub := filepath.Join(dir, "plugin-dir123")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	// A socket whose listener is gone, as a SIGKILLed plugin leaves it.
	dead := filepath.Join(sub, "plugin42")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: dead, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	live := filepath.Join(dir, "csi.sock")
	ll, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ll.Close() })

	removed, err := RemoveStaleSockets(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != dead {
		t.Fatalf("removed %v, want only %s", removed, dead)
	}
	if _, err := os.Stat(sub); !os.IsNotExist(err) {
		t.Fatal("emptied go-plugin dir left behind")
	}
	if _, err := os.Stat(live); err != nil {
		t.Fatalf("live socket removed: %v", err)
	}
}

func TestNewUUIDIsV4(t *testing.T) {
	a, b := NewUUID(), NewUUID()
	if a == b || len(a) != 36 || a[14] != '4' || !strings.ContainsRune("89ab", rune(a[19])) {
		t.Fatalf("uuids %q %q", a, b)
	}
}

// TestSocketDirBudget: the longest socket root the config accepts still
// leaves room for an allocation ID, a task's directory and go-plugin's
// names under sun_path.
func TestSocketDirBudget(t *testing.T) {
	root := "/" + strings.Repeat("r", config.MaxSocketDirLen-1)
	id := NewUUID()
	dir, err := SocketDir("/data", root, id)
	if err != nil {
		t.Fatalf("SocketDir at the config's limit: %v", err)
	}
	longest := filepath.Join(TaskSocketDir(dir, 9999), "plugin-dir0123456789", "plugin0123456789")
	if len(longest) > MaxSocketPath {
		t.Fatalf("%d bytes: %s exceeds the %d-byte limit", len(longest), longest, MaxSocketPath)
	}
	if _, err := SocketDir("/data", root+"x", id); err == nil {
		t.Fatal("a root over the budget was accepted")
	}
}

// A task owns its socket directory: a link it put there to a directory of
// the host's, holding a dead socket, is not followed by the sweep (on
// main the walk listed and cleaned the host directory as root).
func TestRemoveStaleSocketsFollowsNoLink(t *testing.T) {
	dir := t.TempDir()
	host := t.TempDir()
	dead := filepath.Join(host, "plugin42")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: dead, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	if err := os.Symlink(host, filepath.Join(dir, "plugin-dir1")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dead, filepath.Join(dir, "csi.sock")); err != nil {
		t.Fatal(err)
	}
	removed, err := RemoveStaleSockets(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 0 {
		t.Fatalf("removed %v", removed)
	}
	if _, err := os.Lstat(dead); err != nil {
		t.Fatalf("the host's socket was removed through a link: %v", err)
	}
}

// The plugin's log file is made beneath the log directory: a link planted
// at its name (a task with the right to write there once, or a file left
// while the agent was down) is refused, not created through.
func TestPluginLogRefusesPlantedLink(t *testing.T) {
	needRoot(t)
	data := t.TempDir()
	req := layoutReq(data)
	req.Task.Driver = "go_plugin"
	req.Task.User = "nobody"
	if err := prestartDirs(t, data, req); err != nil {
		t.Fatal(err)
	}
	host := filepath.Join(t.TempDir(), "new-file")
	if err := os.Symlink(host, filepath.Join(req.LogDir, pluginLogName(req.Task.Name))); err != nil {
		t.Fatal(err)
	}
	_, err := preparePluginLog(data, req)
	if !errors.Is(err, beneath.ErrUnsafe) {
		t.Fatalf("plugin log through a planted link: %v", err)
	}
	if _, err := os.Lstat(host); err == nil {
		t.Fatal("a file was created through the link")
	}
}
