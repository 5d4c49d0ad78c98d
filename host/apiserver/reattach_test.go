package apiserver

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	plugin "github.com/hashicorp/go-plugin"

	"github.com/pluginhost/pluginhost/api"
)

// reattachBackend adds the reattach record and broker leases to the fake.
type reattachBackend struct {
	*fakeBackend
	rec *api.PluginReattach
	// held gets one value per lease taken; ended one per lease over.
	held, ended chan string
}

func (b *reattachBackend) PluginReattach(_ context.Context, typ, name string) (*api.PluginReattach, error) {
	if b.rec == nil || b.rec.Type != typ || b.rec.Name != name {
		return nil, api.ErrNotFound
	}
	r := *b.rec
	return &r, nil
}

func (b *reattachBackend) HoldBroker(ctx context.Context, typ, name, alloc string, pid int, held func()) error {
	if b.rec == nil || alloc != b.rec.AllocID || pid != b.rec.Pid {
		return api.ErrNotFound
	}
	held()
	b.held <- alloc
	<-ctx.Done()
	b.ended <- alloc
	return nil
}

func startReattachServer(t *testing.T, rec *api.PluginReattach) (*testServer, *reattachBackend) {
	t.Helper()
	rb := &reattachBackend{rec: rec, held: make(chan string, 4), ended: make(chan string, 4)}
	ts := startServer(t, func(cfg *ServerConfig) {
		rb.fakeBackend = cfg.Backend.(*fakeBackend)
		cfg.Backend = rb
	})
	return ts, rb
}

func TestReattachEndpoint(t *testing.T) {
	rec := &api.PluginReattach{Type: "kv", Name: "main", AllocID: "a1", Protocol: "netrpc", ProtocolVersion: 2,
		Network: "unix", Addr: "/tmp/x.sock", Pid: os.Getpid()}
	ts, _ := startReattachServer(t, rec)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	got, err := ts.client.PluginReattach(ctx, "kv", "main")
	if err != nil || *got != *rec {
		t.Fatalf("PluginReattach = %+v, %v; want %+v", got, err, rec)
	}
	if _, err := ts.client.PluginReattach(ctx, "kv", "other"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("unknown plugin: %v, want ErrNotFound", err)
	}
	if _, err := ts.client.PluginReattach(ctx, "k v", "main"); err == nil {
		t.Fatal("bad type accepted")
	}

	rc, err := api.ReattachConfig(ctx, ts.client, "kv", "main")
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
	// asked to stop (package api's tests: a process that is gone is
	// refused).
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
}

// The broker endpoint holds a lease while the request lasts, and refuses
// one for a launch that is not the active instance's. (The consumer's side,
// package api's brokerLease, has its own tests against a stand-in.)
func TestBrokerEndpoint(t *testing.T) {
	rec := &api.PluginReattach{Type: "kv", Name: "main", AllocID: "a1", Protocol: "grpc", ProtocolVersion: 1,
		Network: "unix", Addr: "/tmp/x.sock", Pid: 42}
	ts, rb := startReattachServer(t, rec)
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", ts.sock)
		},
	}}
	defer hc.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lease := func(ctx context.Context, pid int) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://x/v1/plugin/kv/main/broker?alloc=a1&pid="+strconv.Itoa(pid), nil)
		if err != nil {
			t.Fatal(err)
		}
		return hc.Do(req)
	}
	lctx, release := context.WithCancel(ctx)
	resp, err := lease(lctx, 42)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("lease: %v %v", resp, err)
	}
	if got := <-rb.held; got != "a1" {
		t.Fatalf("lease held for %q", got)
	}
	release()
	resp.Body.Close()
	select {
	case got := <-rb.ended:
		if got != "a1" {
			t.Fatalf("lease ended for %q", got)
		}
	case <-ctx.Done():
		t.Fatal("the backend never saw the lease end")
	}
	resp, err = lease(ctx, 43)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("lease for another launch: %s, want 404", resp.Status)
	}
}
