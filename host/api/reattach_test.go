package api

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	plugin "github.com/hashicorp/go-plugin"
)

// reattachBackend adds the reattach record and broker leases to the fake.
type reattachBackend struct {
	*fakeBackend
	rec *PluginReattach
	// held gets one value per lease taken; ended one per lease over.
	held, ended chan string
}

func (b *reattachBackend) PluginReattach(_ context.Context, typ, name string) (*PluginReattach, error) {
	if b.rec == nil || b.rec.Type != typ || b.rec.Name != name {
		return nil, ErrNotFound
	}
	r := *b.rec
	return &r, nil
}

func (b *reattachBackend) HoldBroker(ctx context.Context, typ, name, alloc string, pid int, held func()) error {
	if b.rec == nil || alloc != b.rec.AllocID || pid != b.rec.Pid {
		return ErrNotFound
	}
	held()
	b.held <- alloc
	<-ctx.Done()
	b.ended <- alloc
	return nil
}

func startReattachServer(t *testing.T, rec *PluginReattach) (*testServer, *reattachBackend) {
	t.Helper()
	rb := &reattachBackend{rec: rec, held: make(chan string, 4), ended: make(chan string, 4)}
	ts := startServer(t, func(cfg *ServerConfig) {
		rb.fakeBackend = cfg.Backend.(*fakeBackend)
		cfg.Backend = rb
	})
	return ts, rb
}

func TestReattachEndpoint(t *testing.T) {
	rec := &PluginReattach{Type: "kv", Name: "main", AllocID: "a1", Protocol: "netrpc", ProtocolVersion: 2,
		Network: "unix", Addr: "/tmp/x.sock", Pid: os.Getpid()}
	ts, _ := startReattachServer(t, rec)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	got, err := ts.client.PluginReattach(ctx, "kv", "main")
	if err != nil || *got != *rec {
		t.Fatalf("PluginReattach = %+v, %v; want %+v", got, err, rec)
	}
	if _, err := ts.client.PluginReattach(ctx, "kv", "other"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown plugin: %v, want ErrNotFound", err)
	}
	if _, err := ts.client.PluginReattach(ctx, "k v", "main"); err == nil {
		t.Fatal("bad type accepted")
	}

	rc, err := ReattachConfig(ctx, ts.client, "kv", "main")
	if err != nil {
		t.Fatal(err)
	}
	// Test mode is what keeps a consumer's Kill from stopping the plugin.
	if !rc.Test || rc.Protocol != plugin.ProtocolNetRPC || rc.ProtocolVersion != 2 || rc.Pid != rec.Pid {
		t.Fatalf("reattach config %+v", rc)
	}
	if a, ok := rc.Addr.(*net.UnixAddr); !ok || a.Name != rec.Addr || a.Network() != "unix" {
		t.Fatalf("addr %#v", rc.Addr)
	}
	// The runner watches the process through a pidfd: Wait returns when
	// asked to stop, and a process that is gone is refused.
	r, err := rc.ReattachFunc()
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer wcancel()
	if err := r.Wait(wctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on a live process: %v", err)
	}
	if err := r.Kill(ctx); err == nil {
		t.Fatal("the consumer's runner killed the hosted plugin")
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := attachPidfd(gone.Process.Pid); err == nil {
		t.Fatal("attached to a process that is gone")
	}
}

// A pidfd runner's Wait returns when the process exits.
func TestReattachRunnerSeesExit(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	r, err := attachPidfd(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- r.Wait(context.Background()) }()
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after the process exited")
	}
}

func TestReattachClientConfig(t *testing.T) {
	v2 := plugin.PluginSet{"kv": nil}
	v3 := plugin.PluginSet{"kv3": nil}
	base := &plugin.ClientConfig{Cmd: exec.Command("x"), HandshakeConfig: plugin.HandshakeConfig{ProtocolVersion: 1},
		VersionedPlugins: map[int]plugin.PluginSet{2: v2, 3: v3}}
	cfg, err := ReattachClientConfig(base, &plugin.ReattachConfig{ProtocolVersion: 3})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Cmd != nil || cfg.Reattach == nil || len(cfg.Plugins) != 1 || cfg.Plugins["kv3"] != nil || base.Cmd == nil {
		t.Fatalf("config %+v (base must be left alone)", cfg)
	}
	if _, ok := cfg.Plugins["kv3"]; !ok {
		t.Fatalf("plugins %v, want version 3's", cfg.Plugins)
	}
	if _, err := ReattachClientConfig(base, &plugin.ReattachConfig{ProtocolVersion: 4}); err == nil {
		t.Fatal("no plugin set for version 4, and no error")
	}
	// Plugins alone serve the handshake's version (and any when unset).
	plain := &plugin.ClientConfig{HandshakeConfig: plugin.HandshakeConfig{ProtocolVersion: 1}, Plugins: v2}
	if _, err := ReattachClientConfig(plain, &plugin.ReattachConfig{ProtocolVersion: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := ReattachClientConfig(plain, &plugin.ReattachConfig{ProtocolVersion: 2}); err == nil {
		t.Fatal("version 2 with a version-1 plugin set, and no error")
	}
}

// A broker lease is held until released; the agent sees both ends.
func TestBrokerLease(t *testing.T) {
	rec := &PluginReattach{Type: "kv", Name: "main", AllocID: "a1", Protocol: "grpc", ProtocolVersion: 1,
		Network: "unix", Addr: "/tmp/x.sock", Pid: 42}
	ts, rb := startReattachServer(t, rec)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l := &brokerLease{c: ts.client, rec: *rec}
	release, err := l.hold(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := <-rb.held; got != "a1" {
		t.Fatalf("lease held for %q", got)
	}
	release()
	select {
	case got := <-rb.ended:
		if got != "a1" {
			t.Fatalf("lease ended for %q", got)
		}
	case <-ctx.Done():
		t.Fatal("the agent never saw the lease end")
	}
	release() // twice is harmless

	other := &brokerLease{c: ts.client, rec: PluginReattach{Type: "kv", Name: "main", AllocID: "a1", Pid: 43}}
	if _, err := other.hold(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("lease for another launch: %v, want ErrNotFound", err)
	}
}
