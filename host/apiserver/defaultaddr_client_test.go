package apiserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pluginhost/pluginhost/api"
)

// TestNewClientDefault: NewClient("") reaches a server on the default
// address, and refuses a default directory someone else could write to.
func TestNewClientDefault(t *testing.T) {
	rt := shortDir(t)
	t.Setenv("XDG_RUNTIME_DIR", rt)
	sock, err := api.PrepareDefaultSocketDir()
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Dir(sock)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("default dir: %v %v, want 0700", fi, err)
	}
	addr, _ := api.DefaultAddr()
	srv, err := NewServer(ServerConfig{Addr: addr, Backend: newFakeBackend()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() { cancel(); <-done }()

	c, err := api.NewClient("")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Addr() != addr {
		t.Errorf("Addr = %q, want %q", c.Addr(), addr)
	}
	if _, err := c.Self(ctx); err != nil {
		t.Fatalf("Self on the default address: %v", err)
	}

	if err := os.Chmod(filepath.Dir(sock), 0o777); err != nil {
		t.Fatal(err)
	}
	// A new client: the first one's idle connection would be reused.
	c2, err := api.NewClient("")
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Self(ctx); err == nil || !strings.Contains(err.Error(), "others may write to it") {
		t.Errorf("Self through a world-writable default dir: %v", err)
	}
	if _, err := api.PrepareDefaultSocketDir(); err == nil {
		t.Error("PrepareDefaultSocketDir accepted a world-writable dir")
	}
}
