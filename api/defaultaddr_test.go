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

func TestDefaultSocketPath(t *testing.T) {
	long := "/" + strings.Repeat("x", 100)
	for _, tc := range []struct {
		name, xdg string
		euid      int
		want, err string
	}{
		{name: "user with runtime dir", xdg: "/run/user/1000", euid: 1000, want: "/run/user/1000/pluginhost/api.sock"},
		{name: "user without", euid: 1000, want: "/tmp/pluginhost-1000/api.sock"},
		{name: "relative runtime dir is ignored", xdg: "run/user/1000", euid: 1000, want: "/tmp/pluginhost-1000/api.sock"},
		{name: "root", euid: 0, want: "/run/pluginhost/api.sock"},
		// A root login shell and a systemd unit must agree.
		{name: "root login session", xdg: "/run/user/0/", euid: 0, want: "/run/pluginhost/api.sock"},
		// Tests and nested sessions point root elsewhere.
		{name: "root elsewhere", xdg: "/tmp/t1", euid: 0, want: "/tmp/t1/pluginhost/api.sock"},
		{name: "too long", xdg: long, euid: 1000, err: "over the 107-byte limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := defaultSocketPath(func(k string) string {
				if k == "XDG_RUNTIME_DIR" {
					return tc.xdg
				}
				return ""
			}, tc.euid)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), EnvAddr) {
					t.Fatalf("err = %v, want %q naming %s", err, tc.err, EnvAddr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("= %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

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
