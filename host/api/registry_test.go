package api

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

// registryFake adds a registry to the fake backend.
type registryFake struct {
	*fakeBackend
	plugins map[string]*Plugin // "type/name"
}

func (r *registryFake) RegisteredPlugins(_ context.Context, typ string) ([]*PluginListStub, error) {
	var out []*PluginListStub
	for _, p := range r.plugins {
		if typ == "" || p.Type == typ {
			out = append(out, &PluginListStub{Type: p.Type, Name: p.Name, ActiveAllocID: p.Active.AllocID,
				SocketPath: p.Active.SocketPath, Instances: len(p.Instances)})
		}
	}
	return out, nil
}

func (r *registryFake) RegisteredPlugin(_ context.Context, typ, name string) (*Plugin, error) {
	if p, ok := r.plugins[typ+"/"+name]; ok {
		return p, nil
	}
	return nil, ErrNotFound
}

func TestRegistryEndpoints(t *testing.T) {
	inst := &PluginInstance{Type: "kv", Name: "main", AllocID: "a1", SocketPath: "/run/x.sock", Active: true, RegisteredAt: time.Unix(1, 0).UTC()}
	var rf *registryFake
	ts := startServer(t, func(c *ServerConfig) {
		rf = &registryFake{fakeBackend: c.Backend.(*fakeBackend),
			plugins: map[string]*Plugin{"kv/main": {Type: "kv", Name: "main", Active: inst, Instances: []*PluginInstance{inst}}}}
		c.Backend = rf
	})
	ctx := context.Background()
	p, err := ts.client.RegisteredPlugin(ctx, "kv", "main")
	if err != nil || p.Active == nil || p.Active.SocketPath != "/run/x.sock" {
		t.Fatalf("RegisteredPlugin = %+v, %v", p, err)
	}
	if _, err := ts.client.RegisteredPlugin(ctx, "kv", "other"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown plugin: %v", err)
	}
	list, err := ts.client.RegisteredPlugins(ctx, "")
	if err != nil || len(list) != 1 || list[0].ActiveAllocID != "a1" {
		t.Fatalf("RegisteredPlugins = %+v, %v", list, err)
	}
	// The CSI path keeps its meaning.
	if _, err := ts.client.Plugin(ctx, "main"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("CSI plugin lookup: %v", err)
	}
	for path, field := range map[string]string{
		"/v1/plugin/k%20v/main":           "type",
		"/v1/plugin/kv/-bad":              "name",
		"/v1/registry/plugins?type=a%2Fb": "type",
	} {
		code, er := ts.rawDo(t, http.MethodGet, path, "")
		if code != http.StatusBadRequest || er.Field != field {
			t.Errorf("%s: %d %+v, want 400 naming %q", path, code, er, field)
		}
	}
}

// A backend without a registry answers 404, not a panic.
func TestRegistryEndpointsWithoutRegistry(t *testing.T) {
	ts := startServer(t, nil)
	if _, err := ts.client.RegisteredPlugins(context.Background(), ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
}
