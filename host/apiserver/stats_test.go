package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/pluginhost/pluginhost/api"
)

// AllocStats implements Backend for the fake: every running task of the
// allocation uses 24 MiB and a tenth of a core, as a cgroup would say.
func (f *fakeBackend) AllocStats(_ context.Context, id string) (*api.AllocResourceUsage, error) {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.allocs[id]
	if !ok {
		return nil, fmt.Errorf("allocation %q: %w", id, api.ErrNotFound)
	}
	out := &api.AllocResourceUsage{Tasks: map[string]*api.TaskResourceUsage{}, ResourceUsage: &api.ResourceUsage{
		MemoryStats: &api.MemoryStats{}, CpuStats: &api.CpuStats{}}}
	for name, ts := range a.TaskStates {
		if ts.State != api.TaskStateRunning {
			continue
		}
		ru := &api.ResourceUsage{
			MemoryStats: &api.MemoryStats{RSS: 24 << 20, Usage: 25 << 20, Measured: []string{"RSS", "Usage"}},
			CpuStats:    &api.CpuStats{Percent: 10, TotalTicks: 210, Measured: []string{"Percent"}},
		}
		out.Tasks[name] = &api.TaskResourceUsage{ResourceUsage: ru, Timestamp: 1}
		out.ResourceUsage.MemoryStats.RSS += ru.MemoryStats.RSS
		out.Timestamp = 1
	}
	return out, nil
}

// rawGet is a GET over the test server's socket that returns the status
// and body as they are, for checks of the wire names.
func (ts *testServer) rawGet(t *testing.T, path string) (int, []byte) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", ts.sock)
		},
	}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://x" + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// The stats endpoint has Nomad's path and field names, accepts an ID
// prefix as /v1/allocation does, and answers an unknown allocation with a
// 404 whose JSON body names it.
func TestAllocStatsEndpoint(t *testing.T) {
	ts := startServer(t, nil)
	ts.be.mu.Lock()
	ts.be.allocs["aaaa1111"] = &api.Allocation{AllocListStub: api.AllocListStub{ID: "aaaa1111", ClientStatus: "running",
		TaskStates: map[string]*api.TaskState{"web": {State: api.TaskStateRunning}, "done": {State: api.TaskStateDead}}}, Tasks: []string{"web", "done"}}
	ts.be.allocs["aaaa2222"] = &api.Allocation{AllocListStub: api.AllocListStub{ID: "aaaa2222"}}
	ts.be.mu.Unlock()
	ctx := context.Background()

	st, err := ts.client.AllocStats(ctx, "aaaa1")
	if err != nil {
		t.Fatal(err)
	}
	web := st.Tasks["web"]
	if web == nil || web.ResourceUsage.MemoryStats.RSS != 24<<20 || web.ResourceUsage.CpuStats.TotalTicks != 210 || st.Tasks["done"] != nil {
		t.Fatalf("stats by prefix: %+v", st)
	}

	code, body := ts.rawGet(t, "/v1/client/allocation/aaaa1111/stats")
	var wire map[string]any
	if err := json.Unmarshal(body, &wire); code != http.StatusOK || err != nil {
		t.Fatalf("raw stats: %d %v %s", code, err, body)
	}
	for _, name := range []string{`"ResourceUsage":{"MemoryStats":{"RSS":25165824`, `"CpuStats":{"SystemMode":0,"UserMode":0,"TotalTicks":210`,
		`"Tasks":{"web":{"ResourceUsage"`, `"Timestamp":1`, `"Measured":["RSS","Usage"]`, `"Percent":10`} {
		if !strings.Contains(string(body), name) {
			t.Errorf("stats JSON lacks %s:\n%s", name, body)
		}
	}

	// Unknown: 404, JSON error naming the allocation.
	_, err = ts.client.AllocStats(ctx, "zzz")
	var se *api.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusNotFound || !errors.Is(err, api.ErrNotFound) ||
		!strings.Contains(se.ErrorResponse.Error, `allocation "zzz"`) || !strings.Contains(se.ErrorResponse.Error, "not found") {
		t.Fatalf("unknown allocation: %v", err)
	}
	if status, er := ts.rawDo(t, http.MethodGet, "/v1/client/allocation/zzz/stats", ""); status != 404 || er.Error == "" {
		t.Errorf("unknown allocation, raw: %d %+v", status, er)
	}
	// Ambiguous prefix: 400 listing both; wrong method: 405.
	if status, er := ts.rawDo(t, http.MethodGet, "/v1/client/allocation/aaaa/stats", ""); status != 400 || len(er.Matches) != 2 {
		t.Errorf("ambiguous prefix: %d %+v", status, er)
	}
	if status, er := ts.rawDo(t, http.MethodPost, "/v1/client/allocation/aaaa1111/stats", ""); status != 405 || er.Field != "method" {
		t.Errorf("POST: %d %+v", status, er)
	}
}
