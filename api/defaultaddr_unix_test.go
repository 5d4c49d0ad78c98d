//go:build unix

package api

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestNoDefaultAgent: with no agent, the error says the socket is not there,
// which the CLI turns into "Is the agent running?".
func TestNoDefaultAgent(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", shortDir(t))
	c, err := NewClient("")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Self(context.Background()); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("err = %v, want ENOENT", err)
	}
}

// TestDefaultDirSearchable: search permission for others (root's
// /run/pluginhost, which the plugin socket fallback makes 0711) is no
// reason to refuse; write permission for the group is.
func TestDefaultDirSearchable(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", shortDir(t))
	sock, err := PrepareDefaultSocketDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(sock)
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	if _, err := PrepareDefaultSocketDir(); err != nil {
		t.Errorf("0711 refused: %v", err)
	}
	if err := os.Chmod(dir, 0o770); err != nil {
		t.Fatal(err)
	}
	if _, err := PrepareDefaultSocketDir(); err == nil || !strings.Contains(err.Error(), "mode 0770") {
		t.Errorf("0770: %v", err)
	}
}
