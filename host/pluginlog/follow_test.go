package pluginlog

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/internal/beneath"
)

// capture is an agent log: every line written, and a channel closed at each
// write so that tests wait on writes, not sleeps.
type capture struct {
	mu     sync.Mutex
	buf    strings.Builder
	notify chan struct{}
}

func newCapture() *capture { return &capture{notify: make(chan struct{})} }

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	close(c.notify)
	c.notify = make(chan struct{})
	return len(p), nil
}

func (c *capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

func (c *capture) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		ch, got := c.notify, c.buf.String()
		c.mu.Unlock()
		if strings.Contains(got, s) {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no %q in log:\n%s", s, got)
		}
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func TestFollow(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plugin.log")
	appendTo(t, path, `{"@message":"before the offset"}`+"\n")
	fi, _ := os.Stat(path)
	out := newCapture()
	logger := hclog.New(&hclog.LoggerOptions{Name: "plugin", Output: out, Level: hclog.Trace})
	fl := Follow(openDir(t, dir), "plugin.log", fi.Size(), logger, 10*time.Millisecond)
	defer fl.Stop()

	appendTo(t, path, `{"@level":"warn","@message":"one","@module":"mock","k":1}`+"\n"+`{"@message": 42}`+"\n\n")
	out.waitFor(t, "[WARN]  plugin.mock: one: k=1")
	out.waitFor(t, "[INFO]  plugin: 42")

	// A line arriving in pieces is logged once whole.
	appendTo(t, path, `{"@level":"error","@mess`)
	appendTo(t, path, `age":"two"}`+"\n")
	out.waitFor(t, "[ERROR] plugin: two")

	// Truncated: what is there now is read from the start.
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, `{"@message":"three"}`+"\n")
	out.waitFor(t, "plugin: three")

	// Replaced: the new file is read from its start.
	if err := os.Rename(path, path+".old"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, `{"@message":"four"}`+"\n")
	out.waitFor(t, "plugin: four")

	// Over-long lines are cut, and the line after them is intact.
	appendTo(t, path, strings.Repeat("y", 3*MaxLineBytes)+"\n"+`{"@message":"five"}`+"\n")
	out.waitFor(t, "plugin: five")
	out.waitFor(t, "plugin_line_truncated_bytes=131072")

	// Stop ships an unfinished last line.
	appendTo(t, path, `no newline`)
	fl.Stop()
	got := out.String()
	if !strings.Contains(got, "plugin: no newline") {
		t.Fatalf("last line not shipped:\n%s", got)
	}
	if strings.Contains(got, "before the offset") || strings.Count(got, "one") != 1 {
		t.Fatalf("a line before the offset, or one twice:\n%s", got)
	}
}

func TestFollowMissingFileAndStop(t *testing.T) {
	out := newCapture()
	fl := Follow(openDir(t, t.TempDir()), "never", 0, hclog.New(&hclog.LoggerOptions{Output: out}), 0)
	fl.Stop()
	fl.Stop()
	if out.String() != "" {
		t.Fatalf("logged %q", out.String())
	}
}

func openDir(t *testing.T, dir string) *beneath.Dir {
	t.Helper()
	d, err := beneath.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A plugin log file replaced by a link to a secret of the host (the
// agent's token file) or by a hard link to it is never read: the secret
// does not reach the agent's log, and the refusal is logged once.
func TestFollowRefusesPlantedLinks(t *testing.T) {
	for _, plant := range []string{"symlink", "hard link"} {
		t.Run(plant, func(t *testing.T) {
			dir := t.TempDir()
			secret := filepath.Join(t.TempDir(), "acl-tokens.json")
			appendTo(t, secret, `{"@message":"management-token-5ecret"}`+"\n")
			link := os.Symlink
			if plant == "hard link" {
				link = os.Link
			}
			if err := link(secret, filepath.Join(dir, "plugin.log")); err != nil {
				t.Fatal(err)
			}
			out := newCapture()
			fl := Follow(openDir(t, dir), "plugin.log", 0, hclog.New(&hclog.LoggerOptions{Output: out, Level: hclog.Trace}), 5*time.Millisecond)
			out.waitFor(t, "plugin log file refused")
			fl.Stop()
			if got := out.String(); strings.Contains(got, "5ecret") || strings.Count(got, "plugin log file refused") != 1 {
				t.Fatalf("followed a planted link:\n%s", got)
			}
		})
	}
}
