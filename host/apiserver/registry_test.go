package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// registryFake adds a registry to the fake backend.
type registryFake struct {
	*fakeBackend
	plugins map[string]*api.Plugin // "type/name"
}

func (r *registryFake) RegisteredPlugins(_ context.Context, typ string) ([]*api.PluginListStub, error) {
	var out []*api.PluginListStub
	for _, p := range r.plugins {
		if typ == "" || p.Type == typ {
			stub := &api.PluginListStub{Type: p.Type, Name: p.Name, Instances: len(p.Instances),
				Healthy: p.Healthy, Expected: p.Expected}
			if p.Active != nil {
				stub.ActiveAllocID, stub.SocketPath = p.Active.AllocID, p.Active.SocketPath
			}
			out = append(out, stub)
		}
	}
	return out, nil
}

func (r *registryFake) RegisteredPlugin(_ context.Context, typ, name string) (*api.Plugin, error) {
	if p, ok := r.plugins[typ+"/"+name]; ok {
		return p, nil
	}
	return nil, api.ErrNotFound
}

func TestRegistryEndpoints(t *testing.T) {
	inst := &api.PluginInstance{Type: "kv", Name: "main", AllocID: "a1", SocketPath: "/run/x.sock", Active: true, RegisteredAt: time.Unix(1, 0).UTC()}
	var rf *registryFake
	ts := startServer(t, func(c *ServerConfig) {
		rf = &registryFake{fakeBackend: c.Backend.(*fakeBackend),
			plugins: map[string]*api.Plugin{"kv/main": {Type: "kv", Name: "main", Active: inst, Instances: []*api.PluginInstance{inst}}}}
		c.Backend = rf
	})
	ctx := context.Background()
	p, err := ts.client.RegisteredPlugin(ctx, "kv", "main")
	if err != nil || p.Active == nil || p.Active.SocketPath != "/run/x.sock" {
		t.Fatalf("RegisteredPlugin = %+v, %v", p, err)
	}
	if _, err := ts.client.RegisteredPlugin(ctx, "kv", "other"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("unknown plugin: %v", err)
	}
	list, err := ts.client.RegisteredPlugins(ctx, "")
	if err != nil || len(list) != 1 || list[0].ActiveAllocID != "a1" {
		t.Fatalf("RegisteredPlugins = %+v, %v", list, err)
	}
	// The CSI path keeps its meaning.
	if _, err := ts.client.Plugin(ctx, "main"); !errors.Is(err, api.ErrNotFound) {
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
	if _, err := ts.client.RegisteredPlugins(context.Background(), ""); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
}

// GET /v1/plugins without a type lists every plugin: a CSI plugin once,
// with the fields GET /v1/plugins?type=csi gives it (its csi-node
// registration is not listed again), and the other types as TYPE/NAME,
// registered or only declared. ?type=csi keeps Nomad's list.
func TestAllPlugins(t *testing.T) {
	inst := &api.PluginInstance{Type: "kv", Name: "main", AllocID: "a1", SocketPath: "/run/x.sock", Active: true}
	node := &api.PluginInstance{Type: "csi-node", Name: "mockcsi", AllocID: "a2", SocketPath: "/run/c.sock", Active: true}
	ts := startServer(t, func(c *ServerConfig) {
		be := c.Backend.(*fakeBackend)
		be.plugins["mockcsi"] = &api.CSIPlugin{ID: "mockcsi", Provider: "mock.csi", NodesExpected: 1}
		c.Backend = &registryFake{fakeBackend: be, plugins: map[string]*api.Plugin{
			"kv/main":          {Type: "kv", Name: "main", Active: inst, Instances: []*api.PluginInstance{inst}, Healthy: 1, Expected: 1},
			"kv/later":         {Type: "kv", Name: "later", Expected: 1, Waiting: []*api.PluginInstance{{AllocID: "a3", HealthDescription: "starting"}}},
			"csi-node/mockcsi": {Type: "csi-node", Name: "mockcsi", Active: node, Instances: []*api.PluginInstance{node}},
		}}
	})
	ctx := context.Background()
	all, err := ts.client.AllPlugins(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range all {
		got = append(got, p.Type+" "+p.ID)
	}
	if strings.Join(got, ",") != "csi mockcsi,kv kv/later,kv kv/main" {
		t.Fatalf("AllPlugins = %v", got)
	}
	if c := all[0].CSIPluginListStub; c == nil || c.Provider != "mock.csi" || c.NodesExpected != 1 || all[0].PluginListStub != nil {
		t.Errorf("CSI row: %+v", all[0])
	}
	if g := all[1].PluginListStub; g == nil || g.Name != "later" || g.ActiveAllocID != "" || g.Expected != 1 || g.Healthy != 0 || all[1].CSIPluginListStub != nil {
		t.Errorf("declared row: %+v", all[1])
	}
	if g := all[2].PluginListStub; g == nil || g.ActiveAllocID != "a1" || g.Healthy != 1 {
		t.Errorf("registered row: %+v", all[2])
	}

	// A CSI row has exactly the keys of GET /v1/plugins?type=csi, and Type.
	raw := func(q url.Values) []map[string]any {
		t.Helper()
		var out []map[string]any
		path := "/v1/plugins"
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		code, body := ts.rawGet(t, path)
		if code != http.StatusOK {
			t.Fatalf("/v1/plugins?%s: %d %s", q.Encode(), code, body)
		}
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatalf("/v1/plugins?%s: %v", q.Encode(), err)
		}
		return out
	}
	csiOnly, mixed := raw(url.Values{"type": {"csi"}}), raw(nil)
	if len(csiOnly) != 1 || len(mixed) != 3 {
		t.Fatalf("csi %v, all %v", csiOnly, mixed)
	}
	for k, v := range csiOnly[0] {
		if mixed[0][k] != v {
			t.Errorf("CSI row %s = %v, ?type=csi has %v", k, mixed[0][k], v)
		}
	}
	if len(mixed[0]) != len(csiOnly[0])+1 || mixed[0]["Type"] != "csi" {
		t.Errorf("CSI row %v, want the ?type=csi keys and Type", mixed[0])
	}

	kv, err := ts.client.AllPlugins(ctx, "kv")
	if err != nil || len(kv) != 2 {
		t.Fatalf("AllPlugins(kv) = %v, %v", kv, err)
	}
	if none, err := ts.client.AllPlugins(ctx, "device"); err != nil || len(none) != 0 {
		t.Fatalf("AllPlugins(device) = %v, %v", none, err)
	}
}
