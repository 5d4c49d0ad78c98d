package plugins

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"

	"github.com/pluginhost/pluginhost/csi"
	"github.com/pluginhost/pluginhost/csi/internal/csitest"
	"github.com/pluginhost/pluginhost/dynamic"
)

// harness is a real dynamic.Registry with a Manager following it.
type harness struct {
	reg    *dynamic.Registry
	m      *Manager
	events chan HealthEvent
}

func newHarness(t testing.TB, store dynamic.Store, interval time.Duration) *harness {
	t.Helper()
	reg, err := dynamic.New(dynamic.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Shutdown)
	h := &harness{reg: reg, events: make(chan HealthEvent, 100)}
	h.m, err = NewManager(ManagerConfig{
		Registry:            reg,
		Logger:              hclog.NewNullLogger(),
		FingerprintInterval: interval,
		FingerprintTimeout:  5 * time.Second,
		Client:              csi.ClientConfig{Retry: csi.RetryPolicy{MaxAttempts: 2, BaseDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond}},
		OnHealthChange:      func(e HealthEvent) { h.events <- e },
	})
	if err != nil {
		t.Fatal(err)
	}
	// Registered after reg.Shutdown, so it runs first.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.m.Shutdown(ctx); err != nil {
			t.Errorf("manager shutdown: %v", err)
		}
	})
	return h
}

// refresh fingerprints every allocation of plugin id now, without waiting
// for the interval, and returns once all of them have finished: how tests
// get a fingerprint at a moment of their choosing.
func (m *Manager) refresh(ctx context.Context, id string) error {
	var targets []*instanceManager
	for _, im := range m.snapshot() {
		if im.info().Name == id {
			targets = append(targets, im)
		}
	}
	if len(targets) == 0 {
		return fmt.Errorf("refresh csi plugin %q: %w", id, ErrUnknownPlugin)
	}
	var errs []error
	for _, im := range targets {
		if err := im.refresh(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return csi.JoinErrors(errs...)
}

func (h *harness) register(t testing.TB, typ, name, alloc, socket string) {
	t.Helper()
	if err := h.reg.Register(csitest.Info(typ, name, alloc, socket)); err != nil {
		t.Fatal(err)
	}
}

// event waits for the next health event.
func (h *harness) event(t *testing.T) HealthEvent {
	t.Helper()
	select {
	case e := <-h.events:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no health event")
		return HealthEvent{}
	}
}

func (h *harness) expect(t *testing.T, alloc string, healthy bool) HealthEvent {
	t.Helper()
	e := h.event(t)
	if e.AllocID != alloc || e.Healthy != healthy {
		t.Fatalf("event %q, want alloc %s healthy=%v", e, alloc, healthy)
	}
	return e
}

func TestManagerFingerprintsNewPluginAtOnce(t *testing.T) {
	h := newHarness(t, nil, time.Hour) // only an immediate fingerprint can pass
	if err := h.m.Start(); err != nil {
		t.Fatal(err)
	}
	s := csitest.Serve(t, csitest.NewFakePlugin(), "")
	h.register(t, dynamic.PluginTypeCSINode, "fake", "a1", s.Socket)
	e := h.expect(t, "a1", true)
	if e.PluginID != "fake" || e.Type != dynamic.PluginTypeCSINode || e.String() != "plugin fake (csi-node, alloc a1) became healthy" {
		t.Errorf("event %+v / %q", e, e)
	}
	st, ok := h.m.Plugin("fake")
	if !ok {
		t.Fatal("plugin not known")
	}
	if st.NodesHealthy != 1 || st.NodesExpected != 1 || st.ControllersExpected != 0 || !st.Healthy() {
		t.Errorf("counts %+v", st)
	}
	if st.Provider != "fake.csi.example.com" || st.Version != "1.2.3" || !st.ControllerRequired {
		t.Errorf("provider %q %q required=%v", st.Provider, st.Version, st.ControllerRequired)
	}
	if n := st.Node(); n == nil || n.NodeInfo.NodeID != "node-1" {
		t.Errorf("node fingerprint %+v", n)
	}
	// The summary is the same status without the fingerprints.
	sum, ok := h.m.PluginSummary("fake")
	want := *st
	want.Allocations = nil
	if !ok || !reflect.DeepEqual(sum, &want) {
		t.Errorf("summary %+v, want %+v", sum, &want)
	}
	if _, ok := h.m.Plugin("other"); ok {
		t.Error("unknown plugin found")
	}
	if _, ok := h.m.PluginSummary("other"); ok {
		t.Error("unknown plugin summarised")
	}
}

func TestManagerMonolithCounts(t *testing.T) {
	h := newHarness(t, nil, time.Hour)
	if err := h.m.Start(); err != nil {
		t.Fatal(err)
	}
	mono := csitest.Serve(t, csitest.NewFakePlugin(), "")
	h.register(t, dynamic.PluginTypeCSIController, "mono", "m1", mono.Socket)
	h.register(t, dynamic.PluginTypeCSINode, "mono", "m1", mono.Socket)
	sick := csitest.NewFakePlugin()
	sick.Always["Probe"] = codes.Internal
	bad := csitest.Serve(t, sick, "")
	h.register(t, dynamic.PluginTypeCSINode, "sick", "s1", bad.Socket)
	seen := map[string]bool{}
	for range 3 {
		e := h.event(t)
		seen[e.PluginID+"/"+e.Type] = e.Healthy
	}
	want := map[string]bool{"mono/csi-controller": true, "mono/csi-node": true, "sick/csi-node": false}
	for k, v := range want {
		if got, ok := seen[k]; !ok || got != v {
			t.Errorf("%s: healthy=%v seen=%v, want %v", k, got, ok, v)
		}
	}
	all := h.m.Plugins()
	if len(all) != 2 || all[0].ID != "mono" || all[1].ID != "sick" {
		t.Fatalf("plugins %+v", all)
	}
	m := all[0]
	if m.ControllersHealthy != 1 || m.ControllersExpected != 1 || m.NodesHealthy != 1 || m.NodesExpected != 1 {
		t.Errorf("mono counts %+v", m)
	}
	if len(m.Allocations) != 2 || m.Allocations[0].Type != dynamic.PluginTypeCSIController || m.Controller() == nil {
		t.Errorf("mono allocations %+v", m.Allocations)
	}
	sk := all[1]
	if sk.NodesHealthy != 0 || sk.NodesExpected != 1 || sk.Healthy() || !strings.Contains(sk.Node().HealthDescription, "probe failed") {
		t.Errorf("sick %+v", sk)
	}
}

func TestManagerRollingUpdateSwitchOver(t *testing.T) {
	h := newHarness(t, nil, time.Hour)
	if err := h.m.Start(); err != nil {
		t.Fatal(err)
	}
	oldSrv := csitest.Serve(t, csitest.NewFakePlugin(), "")
	newPlugin := csitest.NewFakePlugin()
	newPlugin.Version = "2.0.0"
	newSrv := csitest.Serve(t, newPlugin, "")

	h.register(t, dynamic.PluginTypeCSINode, "fake", "old", oldSrv.Socket)
	h.expect(t, "old", true)
	h.register(t, dynamic.PluginTypeCSINode, "fake", "new", newSrv.Socket)
	h.expect(t, "new", true) // replacing is not a health change of the old one
	oldSrv.WaitConnClosed(t) // the old instance manager let go of its plugin

	st, _ := h.m.Plugin("fake")
	if len(st.Allocations) != 1 || st.Allocations[0].AllocID != "new" || st.Version != "2.0.0" || st.NodesExpected != 1 {
		t.Fatalf("after switch-over: %+v", st.Allocations[0])
	}

	// The new allocation goes away first (a failed update): the old one,
	// still registered, is active again and fingerprinted at once.
	if err := h.reg.Deregister(dynamic.PluginTypeCSINode, "fake", "new"); err != nil {
		t.Fatal(err)
	}
	h.expect(t, "old", true)
	newSrv.WaitConnClosed(t)
	st, _ = h.m.Plugin("fake")
	if len(st.Allocations) != 1 || st.Allocations[0].AllocID != "old" || st.Version != "1.2.3" {
		t.Fatalf("after fallback: %+v", st.Allocations[0])
	}
}

func TestManagerUpdatedRegistrationRefingerprints(t *testing.T) {
	h := newHarness(t, nil, time.Hour)
	if err := h.m.Start(); err != nil {
		t.Fatal(err)
	}
	a := csitest.Serve(t, csitest.NewFakePlugin(), "")
	b := csitest.Serve(t, csitest.NewFakePlugin(), "")
	h.register(t, dynamic.PluginTypeCSINode, "fake", "a1", a.Socket)
	h.expect(t, "a1", true)
	// Same allocation, new socket (its plugin restarted elsewhere).
	h.register(t, dynamic.PluginTypeCSINode, "fake", "a1", b.Socket)
	h.expect(t, "a1", true)
	a.WaitConnClosed(t)
	if st, _ := h.m.Plugin("fake"); st.Allocations[0].SocketPath != b.Socket {
		t.Fatalf("socket %q, want %q", st.Allocations[0].SocketPath, b.Socket)
	}
}

func TestManagerDeregisterStopsInstance(t *testing.T) {
	h := newHarness(t, nil, time.Hour)
	if err := h.m.Start(); err != nil {
		t.Fatal(err)
	}
	p := csitest.NewFakePlugin()
	s := csitest.Serve(t, p, "")
	h.register(t, dynamic.PluginTypeCSIController, "fake", "a1", s.Socket)
	h.expect(t, "a1", true)
	if err := h.reg.Deregister(dynamic.PluginTypeCSIController, "fake", "a1"); err != nil {
		t.Fatal(err)
	}
	s.WaitConnClosed(t)
	if _, ok := h.m.Plugin("fake"); ok {
		t.Fatal("deregistered plugin still listed")
	}
	if err := h.m.refresh(t.Context(), "fake"); !errors.Is(err, ErrUnknownPlugin) {
		t.Fatalf("refresh of a deregistered plugin: %v", err)
	}
	// Deregistering something never registered is a no-op for the manager.
	if err := h.reg.Deregister(dynamic.PluginTypeCSIController, "ghost", "g1"); err != nil {
		t.Fatal(err)
	}
	if n := len(h.m.Plugins()); n != 0 {
		t.Fatalf("%d plugins left", n)
	}
}

// Plugins restored from the registry's store are fingerprinted when the
// manager starts, and WaitReady holds the agent back until they are.
func TestManagerRestoredPluginsAndWaitReady(t *testing.T) {
	store := dynamic.NewMemStore()
	p := csitest.NewFakePlugin()
	release := make(chan struct{})
	p.Hang["Probe"] = release
	s := csitest.Serve(t, p, "")
	{
		before, err := dynamic.New(dynamic.Config{Store: store})
		if err != nil {
			t.Fatal(err)
		}
		if err := before.Register(csitest.Info(dynamic.PluginTypeCSINode, "fake", "a1", s.Socket)); err != nil {
			t.Fatal(err)
		}
		before.Shutdown()
	}
	h := newHarness(t, store, time.Hour)
	if err := h.m.WaitReady(t.Context()); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("WaitReady before Start: %v", err)
	}
	if err := h.m.Start(); err != nil {
		t.Fatal(err)
	}
	<-p.Probed // the restored plugin is being fingerprinted, and hangs

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	err := h.m.WaitReady(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "fake (csi-node, alloc a1)") {
		t.Fatalf("WaitReady with a hung fingerprint: %v", err)
	}

	ready := make(chan error, 1)
	go func() { ready <- h.m.WaitReady(t.Context()) }()
	close(release)
	select {
	case err := <-ready:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitReady did not return after the fingerprint finished")
	}
	if st, ok := h.m.Plugin("fake"); !ok || !st.Allocations[0].FingerprintDone || !st.Healthy() {
		t.Fatalf("restored plugin status %+v", st)
	}
}

// A failed first fingerprint counts as done: WaitReady must not wait for a
// broken plugin to heal.
func TestManagerWaitReadyFailedFingerprint(t *testing.T) {
	h := newHarness(t, nil, time.Hour)
	p := csitest.NewFakePlugin()
	p.Always["Probe"] = codes.Internal
	s := csitest.Serve(t, p, "")
	h.register(t, dynamic.PluginTypeCSINode, "broken", "b1", s.Socket)
	if err := h.m.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := h.m.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	st, _ := h.m.Plugin("broken")
	if f := st.Node(); !f.FingerprintDone || f.Healthy {
		t.Fatalf("status %+v", f)
	}
	// With nothing registered WaitReady returns at once.
	if err := h.reg.Deregister(dynamic.PluginTypeCSINode, "broken", "b1"); err != nil {
		t.Fatal(err)
	}
	if err := h.m.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
}

// A plugin that breaks is reported by the next fingerprint, and refresh
// produces that fingerprint without waiting for the interval.
func TestManagerRefreshReportsHealthChange(t *testing.T) {
	h := newHarness(t, nil, time.Hour)
	if err := h.m.Start(); err != nil {
		t.Fatal(err)
	}
	p := csitest.NewFakePlugin()
	s := csitest.Serve(t, p, "")
	h.register(t, dynamic.PluginTypeCSINode, "fake", "a1", s.Socket)
	h.expect(t, "a1", true)
	p.Set(func(p *csitest.FakePlugin) { p.Always["Probe"] = codes.FailedPrecondition })
	if err := h.m.refresh(t.Context(), "fake"); err != nil {
		t.Fatal(err)
	}
	e := h.expect(t, "a1", false)
	if !strings.Contains(e.String(), "became unhealthy: probe failed") {
		t.Errorf("event text %q", e)
	}
	// Healthy→healthy or unhealthy→unhealthy is not news.
	if err := h.m.refresh(t.Context(), "fake"); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-h.events:
		t.Fatalf("unexpected event %q", e)
	default:
	}
}

func TestManagerShutdownRecordsUnhealthy(t *testing.T) {
	h := newHarness(t, nil, time.Hour)
	if err := h.m.Start(); err != nil {
		t.Fatal(err)
	}
	a := csitest.Serve(t, csitest.NewFakePlugin(), "")
	b := csitest.Serve(t, csitest.NewFakePlugin(), "")
	h.register(t, dynamic.PluginTypeCSIController, "x", "a1", a.Socket)
	h.register(t, dynamic.PluginTypeCSINode, "y", "b1", b.Socket)
	h.event(t)
	h.event(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := h.m.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for range 2 {
		e := h.event(t)
		if e.Healthy || e.Description != "agent shutting down" {
			t.Errorf("shutdown event %q", e)
		}
		got[e.AllocID] = true
	}
	if !got["a1"] || !got["b1"] {
		t.Errorf("shutdown events for %v", got)
	}
	for _, st := range h.m.Plugins() {
		for _, f := range st.Allocations {
			if f.Healthy || f.HealthDescription != "agent shutting down" {
				t.Errorf("%s/%s after shutdown: %+v", f.PluginID, f.Type, f)
			}
		}
	}
	a.WaitConnClosed(t)
	b.WaitConnClosed(t)
	// After Shutdown the registry is no longer followed.
	c := csitest.Serve(t, csitest.NewFakePlugin(), "")
	h.register(t, dynamic.PluginTypeCSINode, "z", "c1", c.Socket)
	if _, ok := h.m.Plugin("z"); ok {
		t.Error("plugin registered after shutdown was picked up")
	}
	if err := h.m.WaitReady(t.Context()); !errors.Is(err, ErrManagerShutdown) {
		t.Errorf("WaitReady after shutdown: %v", err)
	}
	if err := h.m.Start(); !errors.Is(err, ErrManagerShutdown) {
		t.Errorf("Start after shutdown: %v", err)
	}
	if err := h.m.Shutdown(ctx); err != nil {
		t.Errorf("second shutdown: %v", err)
	}
}

func TestManagerSurvivesRegistryShutdown(t *testing.T) {
	h := newHarness(t, nil, time.Hour)
	if err := h.m.Start(); err != nil {
		t.Fatal(err)
	}
	s := csitest.Serve(t, csitest.NewFakePlugin(), "")
	h.register(t, dynamic.PluginTypeCSINode, "fake", "a1", s.Socket)
	h.expect(t, "a1", true)
	h.reg.Shutdown()
	// The instance keeps its state and still answers refreshes.
	if err := h.m.refresh(t.Context(), "fake"); err != nil {
		t.Fatal(err)
	}
	if st, ok := h.m.Plugin("fake"); !ok || !st.Healthy() {
		t.Fatalf("status after registry shutdown: %+v", st)
	}
}

func TestNewManagerNeedsRegistry(t *testing.T) {
	if _, err := NewManager(ManagerConfig{}); err == nil {
		t.Fatal("NewManager without a registry succeeded")
	}
}

// WaitReady stops waiting for an allocation that is deregistered while its
// first fingerprint hangs.
func TestManagerWaitReadyDeregisteredWhileWaiting(t *testing.T) {
	h := newHarness(t, nil, time.Hour)
	p := csitest.NewFakePlugin()
	p.Hang["Probe"] = make(chan struct{}) // never released
	s := csitest.Serve(t, p, "")
	h.register(t, dynamic.PluginTypeCSINode, "stuck", "s1", s.Socket)
	if err := h.m.Start(); err != nil {
		t.Fatal(err)
	}
	<-p.Probed
	ready := make(chan error, 1)
	go func() { ready <- h.m.WaitReady(t.Context()) }()
	if err := h.reg.Deregister(dynamic.PluginTypeCSINode, "stuck", "s1"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ready:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitReady still waits for a deregistered plugin")
	}
}

// Fast churn (a plugin that crash-loops through registrations) leaves
// exactly the last allocation, and no instance behind.
func TestManagerChurn(t *testing.T) {
	h := newHarness(t, nil, time.Hour)
	if err := h.m.Start(); err != nil {
		t.Fatal(err)
	}
	s := csitest.Serve(t, csitest.NewFakePlugin(), "")
	for i := range 20 {
		alloc := fmt.Sprintf("a%02d", i)
		h.register(t, dynamic.PluginTypeCSINode, "fake", alloc, s.Socket)
		if i%3 != 2 {
			if err := h.reg.Deregister(dynamic.PluginTypeCSINode, "fake", alloc); err != nil {
				t.Fatal(err)
			}
		}
	}
	last := "a19"
	h.register(t, dynamic.PluginTypeCSINode, "fake", last, s.Socket)
	if err := h.m.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	active, _ := h.reg.Active(dynamic.PluginTypeCSINode, "fake")
	st, ok := h.m.Plugin("fake")
	if !ok || len(st.Allocations) != 1 || st.Allocations[0].AllocID != active.AllocID {
		t.Fatalf("status %+v, registry active %s", st, active.AllocID)
	}
	if !st.Allocations[0].FingerprintDone {
		t.Fatal("active allocation not fingerprinted")
	}
}

func TestManagerClient(t *testing.T) {
	h := newHarness(t, nil, time.Hour)
	if err := h.m.Start(); err != nil {
		t.Fatal(err)
	}
	s := csitest.Serve(t, csitest.NewFakePlugin(), "")
	h.register(t, dynamic.PluginTypeCSIController, "fake", "a1", s.Socket)
	h.expect(t, "a1", true)
	c, err := h.m.Client("fake", dynamic.PluginTypeCSIController)
	if err != nil {
		t.Fatal(err)
	}
	if c.Socket() != s.Socket {
		t.Fatalf("client for %q, want %q", c.Socket(), s.Socket)
	}
	vol, err := c.CreateVolume(t.Context(), &csipb.CreateVolumeRequest{Name: "v"})
	if err != nil || vol.GetVolume().GetVolumeId() != "vol-v" {
		t.Fatalf("CreateVolume = %v, %v", vol, err)
	}
	if _, err := h.m.Client("fake", dynamic.PluginTypeCSINode); !errors.Is(err, ErrUnknownPlugin) {
		t.Fatalf("client of an unregistered type: %v", err)
	}
}

// TestManagerSwitchOverKeepsHealthUntilFingerprinted: between a new
// allocation's registration and its first fingerprint, the plugin is still
// reported healthy (with the displaced allocation's last fingerprint), not
// with no healthy instance: a status sampled in that window used to say 0
// (1 sample in 417 of the e2e update test).
func TestManagerSwitchOverKeepsHealthUntilFingerprinted(t *testing.T) {
	h := newHarness(t, nil, time.Hour)
	if err := h.m.Start(); err != nil {
		t.Fatal(err)
	}
	oldSrv := csitest.Serve(t, csitest.NewFakePlugin(), "")
	slow := csitest.NewFakePlugin()
	hang := make(chan struct{})
	slow.Hang["Probe"] = hang
	entered := make(chan string, 64)
	slow.Entered = entered
	newSrv := csitest.Serve(t, slow, "")

	h.register(t, dynamic.PluginTypeCSINode, "fake", "old", oldSrv.Socket)
	h.expect(t, "old", true)
	h.register(t, dynamic.PluginTypeCSINode, "fake", "new", newSrv.Socket)
	for m := range entered {
		if m == "Probe" {
			break // the new allocation's first fingerprint is in flight
		}
	}
	st, ok := h.m.Plugin("fake")
	if !ok || st.NodesHealthy != 1 {
		t.Fatalf("during the switch-over: %+v", st)
	}
	close(hang)
	h.expect(t, "new", true)
	if st, _ := h.m.Plugin("fake"); st.Allocations[0].AllocID != "new" || st.NodesHealthy != 1 {
		t.Fatalf("after the first fingerprint: %+v", st.Allocations[0])
	}
}
