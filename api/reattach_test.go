package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"testing"
	"time"

	plugin "github.com/hashicorp/go-plugin"
)

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

// A broker lease is held until released, and taken only for the launch
// the agent knows: against a stand-in for the agent's broker endpoint
// (host/apiserver's TestBrokerEndpoint tests the real one).
func TestBrokerLease(t *testing.T) {
	rec := &PluginReattach{Type: "kv", Name: "main", AllocID: "a1", Protocol: "grpc", ProtocolVersion: 1,
		Network: "unix", Addr: "/tmp/x.sock", Pid: 42}
	held, ended := make(chan string, 4), make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.URL.Path != "/v1/plugin/kv/main/broker" || q.Get("alloc") != rec.AllocID || q.Get("pid") != strconv.Itoa(rec.Pid) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(ErrorResponse{Error: "no such launch"})
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		held <- q.Get("alloc")
		<-r.Context().Done()
		ended <- q.Get("alloc")
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL, WithToken("x"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l := &brokerLease{c: c, rec: *rec}
	release, err := l.hold(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := <-held; got != "a1" {
		t.Fatalf("lease held for %q", got)
	}
	release()
	select {
	case got := <-ended:
		if got != "a1" {
			t.Fatalf("lease ended for %q", got)
		}
	case <-ctx.Done():
		t.Fatal("the agent never saw the lease end")
	}
	release() // twice is harmless

	other := &brokerLease{c: c, rec: PluginReattach{Type: "kv", Name: "main", AllocID: "a1", Pid: 43}}
	if _, err := other.hold(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("lease for another launch: %v, want ErrNotFound", err)
	}
}

// Records name the same instance when they name the same launch, whatever
// their standbys.
func TestPluginReattachSameInstance(t *testing.T) {
	a := &PluginReattach{AllocID: "a", Protocol: "grpc", ProtocolVersion: 1, Network: "unix", Addr: "/s", Pid: 7}
	withStandby := *a
	withStandby.Standby = &PluginReattach{AllocID: "b"}
	relaunched := *a
	relaunched.Pid = 8
	cases := []struct {
		x, y *PluginReattach
		same bool
	}{
		{a, a, true},
		{a, &withStandby, true},
		{a, &relaunched, false},
		{a, nil, false},
		{nil, a, false},
		{nil, nil, true},
	}
	for i, c := range cases {
		if got := c.x.SameInstance(c.y); got != c.same {
			t.Errorf("case %d: SameInstance %v, want %v", i, got, c.same)
		}
	}
}
