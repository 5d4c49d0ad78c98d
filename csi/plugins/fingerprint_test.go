package plugins

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/pluginhost/pluginhost/csi"
	"github.com/pluginhost/pluginhost/csi/internal/csitest"
	"github.com/pluginhost/pluginhost/dynamic"
)

func fingerprintOnce(t *testing.T, p *csitest.FakePlugin, typ string) *Fingerprint {
	t.Helper()
	s := csitest.Serve(t, p, "")
	f := newFingerprinter(csitest.Info(typ, "fake", "a1", s.Socket), testClient(t, s.Socket, csi.RetryPolicy{MaxAttempts: 2}), nil)
	return f.run(t.Context())
}

func TestFingerprintHealthyNode(t *testing.T) {
	fp := fingerprintOnce(t, csitest.NewFakePlugin(), dynamic.PluginTypeCSINode)
	if !fp.Healthy || fp.HealthDescription != "healthy" || !fp.FingerprintDone {
		t.Fatalf("fingerprint = %+v", fp)
	}
	if fp.Provider != "fake.csi.example.com" || fp.ProviderVersion != "1.2.3" || fp.Manifest["k"] != "v" {
		t.Errorf("provider = %q %q %v", fp.Provider, fp.ProviderVersion, fp.Manifest)
	}
	if fp.PluginID != "fake" || fp.AllocID != "a1" || fp.Type != dynamic.PluginTypeCSINode {
		t.Errorf("identity = %q %q %q", fp.PluginID, fp.AllocID, fp.Type)
	}
	if !slices.Equal(fp.NodeCapabilities, []string{"STAGE_UNSTAGE_VOLUME"}) || fp.ControllerCapabilities != nil {
		t.Errorf("caps = node %q controller %q", fp.NodeCapabilities, fp.ControllerCapabilities)
	}
	ni := fp.NodeInfo
	if ni == nil || ni.NodeID != "node-1" || ni.MaxVolumes != 16 || ni.Topology["zone"] != "z1" {
		t.Errorf("node info = %+v", ni)
	}
	if fp.LastFingerprint.IsZero() {
		t.Error("no fingerprint time")
	}
}

func TestFingerprintHealthyController(t *testing.T) {
	p := csitest.NewFakePlugin()
	p.CtrlCaps = append(p.CtrlCaps, csitest.CtrlCap(99), csitest.CtrlCap(csipb.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME))
	fp := fingerprintOnce(t, p, dynamic.PluginTypeCSIController)
	if !fp.Healthy {
		t.Fatalf("unhealthy: %s", fp.HealthDescription)
	}
	if want := []string{"CREATE_DELETE_VOLUME", "UNKNOWN(99)"}; !slices.Equal(fp.ControllerCapabilities, want) {
		t.Errorf("controller caps = %q, want %q", fp.ControllerCapabilities, want)
	}
	if fp.NodeInfo != nil || p.CallCount("NodeGetInfo") != 0 {
		t.Errorf("controller fingerprint asked for node info")
	}
}

func TestFingerprintUnhealthyCases(t *testing.T) {
	for _, tc := range []struct {
		name  string
		typ   string
		knob  func(p *csitest.FakePlugin)
		want  string
		extra func(t *testing.T, fp *Fingerprint)
	}{
		{"probe not ready", dynamic.PluginTypeCSINode,
			func(p *csitest.FakePlugin) { p.Ready = wrapperspb.Bool(false) }, "starting", nil},
		{"probe fails", dynamic.PluginTypeCSINode,
			func(p *csitest.FakePlugin) { p.Always["Probe"] = codes.Internal }, "probe failed", nil},
		{"probe unimplemented", dynamic.PluginTypeCSINode,
			func(p *csitest.FakePlugin) { p.Always["Probe"] = codes.Unimplemented }, "Unimplemented", nil},
		{"node info fails", dynamic.PluginTypeCSINode,
			func(p *csitest.FakePlugin) { p.Always["NodeGetInfo"] = codes.Unimplemented }, "node info", nil},
		{"empty node id", dynamic.PluginTypeCSINode,
			func(p *csitest.FakePlugin) { p.NodeID = "" }, "empty node id", nil},
		{"empty driver name", dynamic.PluginTypeCSINode,
			func(p *csitest.FakePlugin) { p.Name = "" }, "empty name", nil},
		{"controller without CONTROLLER_SERVICE", dynamic.PluginTypeCSIController,
			func(p *csitest.FakePlugin) { p.PluginCaps = nil }, "does not advertise CONTROLLER_SERVICE", nil},
		{"controller capabilities fail", dynamic.PluginTypeCSIController,
			func(p *csitest.FakePlugin) { p.Always["ControllerGetCapabilities"] = codes.Unimplemented }, "controller capabilities", nil},
		{"unknown type", "csi-monolith", func(p *csitest.FakePlugin) {}, "unknown CSI plugin type", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := csitest.NewFakePlugin()
			tc.knob(p)
			fp := fingerprintOnce(t, p, tc.typ)
			if fp.Healthy || !fp.FingerprintDone || !strings.Contains(fp.HealthDescription, tc.want) {
				t.Fatalf("healthy=%v done=%v description %q, want unhealthy with %q", fp.Healthy, fp.FingerprintDone, fp.HealthDescription, tc.want)
			}
		})
	}
}

func TestFingerprintProbeWithoutReadyIsReady(t *testing.T) {
	p := csitest.NewFakePlugin()
	p.Ready = nil
	if fp := fingerprintOnce(t, p, dynamic.PluginTypeCSINode); !fp.Healthy {
		t.Fatalf("unset ready should mean ready: %s", fp.HealthDescription)
	}
	p = csitest.NewFakePlugin()
	p.Ready = wrapperspb.Bool(true)
	if fp := fingerprintOnce(t, p, dynamic.PluginTypeCSINode); !fp.Healthy {
		t.Fatalf("ready=true: %s", fp.HealthDescription)
	}
}

// The once-only part is asked until it succeeds, then never again.
func TestFingerprintStaticPartOnce(t *testing.T) {
	p := csitest.NewFakePlugin()
	p.Script["NodeGetInfo"] = []codes.Code{codes.Internal}
	s := csitest.Serve(t, p, "")
	f := newFingerprinter(csitest.Info(dynamic.PluginTypeCSINode, "fake", "a1", s.Socket), testClient(t, s.Socket, csi.RetryPolicy{MaxAttempts: 1}), nil)
	if fp := f.run(t.Context()); fp.Healthy {
		t.Fatal("first fingerprint should fail on NodeGetInfo")
	}
	for range 3 {
		if fp := f.run(t.Context()); !fp.Healthy {
			t.Fatalf("unhealthy: %s", fp.HealthDescription)
		}
	}
	if n := p.CallCount("GetPluginInfo"); n != 2 {
		t.Errorf("GetPluginInfo called %d times, want 2 (failed cycle + first good one)", n)
	}
	if n := p.CallCount("NodeGetInfo"); n != 2 {
		t.Errorf("NodeGetInfo called %d times, want 2", n)
	}
	if n := p.CallCount("Probe"); n != 4 {
		t.Errorf("Probe called %d times, want every cycle (4)", n)
	}
	// Asked together with the rest, so also in the cycle that failed.
	if n := p.CallCount("NodeGetCapabilities"); n != 4 {
		t.Errorf("NodeGetCapabilities called %d times, want every cycle (4)", n)
	}
}

// updates collects an instance manager's onUpdate calls.
type updates chan [2]*Fingerprint

func (u updates) hook(prev, cur *Fingerprint, _ bool) { u <- [2]*Fingerprint{prev, cur} }

func (u updates) next(t *testing.T) *Fingerprint {
	t.Helper()
	select {
	case up := <-u:
		return up[1]
	case <-time.After(10 * time.Second):
		t.Fatal("no fingerprint update")
		return nil
	}
}

func startInstance(t *testing.T, socket string, interval time.Duration) (*instanceManager, updates) {
	t.Helper()
	u := make(updates, 100)
	im := newInstanceManager(instanceConfig{
		info:     csitest.Info(dynamic.PluginTypeCSINode, "fake", "a1", socket),
		logger:   hclog.NewNullLogger(),
		interval: interval,
		timeout:  5 * time.Second,
		acquire:  newClientPool(csi.ClientConfig{Retry: csi.RetryPolicy{MaxAttempts: 1}}, hclog.NewNullLogger()).acquire,
		onUpdate: u.hook,
	})
	im.start(context.Background())
	t.Cleanup(func() { im.stop("test over", false) })
	return im, u
}

func TestInstanceManagerIntervalAndHealthFlip(t *testing.T) {
	p := csitest.NewFakePlugin()
	s := csitest.Serve(t, p, "")
	_, u := startInstance(t, s.Socket, 10*time.Millisecond)
	if fp := u.next(t); !fp.Healthy {
		t.Fatalf("first fingerprint unhealthy: %s", fp.HealthDescription)
	}
	// Nothing triggers the next fingerprints but the interval.
	p.Set(func(p *csitest.FakePlugin) { p.Always["Probe"] = codes.Unavailable })
	for fp := u.next(t); fp.Healthy; fp = u.next(t) {
	}
	p.Set(func(p *csitest.FakePlugin) { delete(p.Always, "Probe") })
	for fp := u.next(t); !fp.Healthy; fp = u.next(t) {
	}
}

func TestInstanceManagerRefreshAndStop(t *testing.T) {
	p := csitest.NewFakePlugin()
	s := csitest.Serve(t, p, "")
	im, u := startInstance(t, s.Socket, time.Hour)
	if fp := u.next(t); !fp.Healthy {
		t.Fatalf("first fingerprint unhealthy: %s", fp.HealthDescription)
	}
	p.Set(func(p *csitest.FakePlugin) { p.Ready = wrapperspb.Bool(false) })
	// With an hour's interval only the refresh can produce this.
	if err := im.refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if fp := im.fingerprint(); fp.Healthy || !strings.Contains(fp.HealthDescription, "starting") {
		t.Fatalf("after refresh: healthy=%v %q", fp.Healthy, fp.HealthDescription)
	}
	im.stop("deregistered", false)
	fp := im.fingerprint()
	if fp.Healthy || fp.HealthDescription != "deregistered" {
		t.Fatalf("after stop: healthy=%v %q", fp.Healthy, fp.HealthDescription)
	}
	s.WaitConnClosed(t)
	if err := im.refresh(t.Context()); err == nil {
		t.Fatal("refresh of a stopped instance succeeded")
	}
	im.stop("again", false) // idempotent; first reason stays
	if got := im.fingerprint().HealthDescription; got != "deregistered" {
		t.Fatalf("second stop changed the reason to %q", got)
	}
}

// A stop while a fingerprint hangs ends it at once instead of waiting for
// the fingerprint timeout.
func TestInstanceManagerStopDuringHungProbe(t *testing.T) {
	p := csitest.NewFakePlugin()
	p.Hang["Probe"] = make(chan struct{})
	s := csitest.Serve(t, p, "")
	im, _ := startInstance(t, s.Socket, time.Hour)
	<-p.Probed
	stopped := make(chan struct{})
	go func() {
		im.stop("agent shutting down", false)
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(4 * time.Second): // the fingerprint timeout is 5s
		t.Fatal("stop waited for the hung probe")
	}
	if fp := im.fingerprint(); fp.Healthy || !fp.FingerprintDone || fp.HealthDescription != "agent shutting down" {
		t.Fatalf("final fingerprint %+v", fp)
	}
}

func TestInstanceManagerBadSocket(t *testing.T) {
	long := "/" + strings.Repeat("x", 200)
	im, u := startInstance(t, long, time.Hour)
	fp := u.next(t)
	if fp.Healthy || !strings.Contains(fp.HealthDescription, "limit") {
		t.Fatalf("fingerprint %+v", fp)
	}
	im.stop("done", false)
}

// A fingerprint asks its questions at once, not one after another: every
// RPC of a node's first fingerprint is in flight before any is answered.
func TestFingerprintAsksAtOnce(t *testing.T) {
	p := csitest.NewFakePlugin()
	gate := make(chan struct{})
	methods := []string{"Probe", "GetPluginInfo", "GetPluginCapabilities", "NodeGetInfo", "NodeGetCapabilities"}
	p.Entered = make(chan string, 16)
	for _, m := range methods {
		p.Hang[m] = gate
	}
	s := csitest.Serve(t, p, "")
	f := newFingerprinter(csitest.Info(dynamic.PluginTypeCSINode, "fake", "a1", s.Socket), testClient(t, s.Socket, csi.RetryPolicy{MaxAttempts: 1}), nil)
	// Asked one by one, the first call would hang until this deadline.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	done := make(chan *Fingerprint, 1)
	go func() { done <- f.run(ctx) }()
	seen := map[string]bool{}
	for len(seen) < len(methods) {
		select {
		case m := <-p.Entered:
			seen[m] = true
		case fp := <-done:
			t.Fatalf("fingerprint finished with %v in flight of %v: %s", seen, methods, fp.HealthDescription)
		}
	}
	close(gate)
	if fp := <-done; !fp.Healthy {
		t.Fatalf("unhealthy: %s", fp.HealthDescription)
	}
}
