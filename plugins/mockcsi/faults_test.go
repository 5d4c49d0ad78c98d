package main

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/pluginhost/pluginhost/sdk/sdktest"
)

// exitRecorder stands in for os.Exit. gRPC handlers call it on server
// goroutines, hence the lock.
type exitRecorder struct {
	mu    sync.Mutex
	codes []int
}

func (e *exitRecorder) exit(code int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.codes = append(e.codes, code)
}

func (e *exitRecorder) calls() []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.codes)
}

func TestFaultProbeFail(t *testing.T) {
	f := newFaults(faultConfig{ProbeFail: true}, nil)
	_, err := f.probe(context.Background())
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("probe = %v, want FAILED_PRECONDITION", err)
	}
	if ready, err := newFaults(faultConfig{}, nil).probe(context.Background()); err != nil || !ready {
		t.Fatalf("healthy probe = %t, %v; want ready", ready, err)
	}
}

func TestFaultProbeDelay(t *testing.T) {
	const delay = 50 * time.Millisecond
	f := newFaults(faultConfig{ProbeDelay: delay}, nil)
	start := time.Now()
	if _, err := f.probe(context.Background()); err != nil {
		t.Fatalf("probe: %v", err)
	}
	if took := time.Since(start); took < delay {
		t.Fatalf("probe took %s, want >= %s", took, delay)
	}
	// The caller's deadline wins over the injected delay.
	f = newFaults(faultConfig{ProbeDelay: time.Hour}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := f.probe(ctx); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("probe past deadline = %v, want DEADLINE_EXCEEDED", err)
	}
}

func TestFaultNotReadyFor(t *testing.T) {
	f := newFaults(faultConfig{NotReadyFor: time.Minute}, nil)
	now := f.started
	f.now = func() time.Time { return now }
	if ready, err := f.probe(context.Background()); err != nil || ready {
		t.Fatalf("probe at start = %t, %v; want ready=false", ready, err)
	}
	now = f.started.Add(time.Minute)
	if ready, err := f.probe(context.Background()); err != nil || !ready {
		t.Fatalf("probe after a minute = %t, %v; want ready=true", ready, err)
	}
}

func TestFaultLatency(t *testing.T) {
	const latency = 30 * time.Millisecond
	f := newFaults(faultConfig{Latency: latency}, nil)
	start := time.Now()
	if err := f.enter(context.Background()); err != nil {
		t.Fatalf("enter: %v", err)
	}
	if took := time.Since(start); took < latency {
		t.Fatalf("enter took %s, want >= %s", took, latency)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := newFaults(faultConfig{Latency: time.Hour}, nil).enter(ctx); status.Code(err) != codes.Canceled {
		t.Fatalf("enter on a cancelled context = %v, want CANCELED", err)
	}
}

func TestFaultCrashAfter(t *testing.T) {
	rec := &exitRecorder{}
	f := newFaults(faultConfig{CrashAfter: 3}, rec.exit)
	for i := range 3 {
		if err := f.enter(context.Background()); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	if len(rec.calls()) != 0 {
		t.Fatalf("exited after %d calls, want only after the 4th", 3)
	}
	if err := f.enter(context.Background()); status.Code(err) != codes.Unavailable {
		t.Fatalf("4th call = %v, want UNAVAILABLE", err)
	}
	if len(rec.codes) != 1 || rec.codes[0] != crashExitCode {
		t.Fatalf("exit calls = %v, want [%d]", rec.codes, crashExitCode)
	}
}

func TestFaultExitAtStart(t *testing.T) {
	rec := &exitRecorder{}
	if newFaults(faultConfig{}, rec.exit).exitAtStart() {
		t.Fatalf("exited without being asked to")
	}
	code := 0 // exiting 0 at start is a valid request too
	if !newFaults(faultConfig{ExitAtStart: &code}, rec.exit).exitAtStart() || len(rec.codes) != 1 || rec.codes[0] != 0 {
		t.Fatalf("exit calls = %v, want [0]", rec.codes)
	}
}

// TestFaultsThroughGRPC checks that the Probe faults reach a real Probe over
// the socket and leave the other calls alone.
func TestFaultsThroughGRPC(t *testing.T) {
	opts := testOptions(shortTempDir(t))
	opts.Faults = faultConfig{ProbeFail: true}
	_, p := startDriver(t, opts)
	if _, err := p.Identity.Probe(context.Background(), &csi.ProbeRequest{}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("Probe = %v, want FAILED_PRECONDITION", err)
	}
	if _, err := p.Identity.GetPluginInfo(context.Background(), &csi.GetPluginInfoRequest{}); err != nil {
		t.Fatalf("GetPluginInfo with a failing probe: %v", err)
	}
}

// startFaultyDriver serves a driver with faults whose exits are recorded.
func startFaultyDriver(t *testing.T, cfg faultConfig) (*exitRecorder, *sdktest.Plugin) {
	t.Helper()
	opts := testOptions(shortTempDir(t))
	opts.Faults = cfg
	rec := &exitRecorder{}
	d, err := newDriver(opts, hclog.NewNullLogger(), rec.exit)
	if err != nil {
		t.Fatalf("newDriver: %v", err)
	}
	t.Cleanup(d.close)
	return rec, serveDriver(t, d)
}

// The interceptor counts every CSI call towards CrashAfter, whichever
// service it is on, and no health check: a host's health pings must not
// crash the plugin early.
func TestCrashAfterCountsCSICallsOnly(t *testing.T) {
	rec, p := startFaultyDriver(t, faultConfig{CrashAfter: 2})
	ctx := context.Background()
	health := healthpb.NewHealthClient(p.Conn)
	for i := range 3 {
		if _, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: "plugin"}); err != nil {
			t.Fatalf("health check %d: %v", i+1, err)
		}
	}
	if _, err := p.Identity.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{}); err != nil {
		t.Fatalf("1st CSI call: %v", err)
	}
	if _, err := p.Node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{}); err != nil {
		t.Fatalf("2nd CSI call: %v", err)
	}
	if got := rec.calls(); len(got) != 0 {
		t.Fatalf("exited (%v) within the limit", got)
	}
	_, err := p.Controller.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
	wantCode(t, err, codes.Unavailable)
	if got := rec.calls(); !slices.Equal(got, []int{crashExitCode}) {
		t.Fatalf("exit calls = %v, want [%d]", got, crashExitCode)
	}
}

// The latency holds every CSI call (here past its deadline) and no health
// check.
func TestLatencyDelaysCSICallsOnly(t *testing.T) {
	_, p := startFaultyDriver(t, faultConfig{Latency: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := healthpb.NewHealthClient(p.Conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "plugin"}); err != nil {
		t.Fatalf("health check under an hour of latency: %v", err)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	_, err := p.Controller.ListVolumes(short, &csi.ListVolumesRequest{})
	wantCode(t, err, codes.DeadlineExceeded)
}

func TestParseFailRules(t *testing.T) {
	got, err := parseFailRules("CreateVolume:3:UNAVAILABLE, DeleteVolume:1:Internal,NodeStageVolume:*:FAILED_PRECONDITION,Probe:-1:cancelled,")
	if err != nil {
		t.Fatalf("parseFailRules: %v", err)
	}
	want := []failRule{
		{"CreateVolume", 3, codes.Unavailable},
		{"DeleteVolume", 1, codes.Internal},
		{"NodeStageVolume", -1, codes.FailedPrecondition},
		{"Probe", -1, codes.Canceled},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("rules = %v, want %v", got, want)
	}
	if rules, err := parseFailRules(""); err != nil || len(rules) != 0 {
		t.Fatalf("empty list = %v, %v; want no rules", rules, err)
	}
	for _, bad := range []string{
		"CreateVolume",                                       // no count or code
		"CreateVolume:3",                                     // no code
		"CreateVolume:3:UNAVAILABLE:x",                       // too many parts
		"CreateVolumes:3:UNAVAILABLE",                        // not a CSI method
		"CreateVolume:three:UNAVAILABLE",                     // not a count
		"CreateVolume:-2:UNAVAILABLE",                        // only -1 means always
		"CreateVolume:3:OK",                                  // not a failure
		"CreateVolume:3:BROKEN",                              // not a code
		"CreateVolume:1:INTERNAL,CreateVolume:2:UNAVAILABLE", // ambiguous
	} {
		if _, err := parseFailRules(bad); err == nil {
			t.Errorf("parseFailRules(%q): no error", bad)
		}
	}
}

// The first N calls fail and later ones reach the handler; the count is
// exact under concurrent calls.
func TestFaultFailCountsConcurrentCalls(t *testing.T) {
	f := newFaults(faultConfig{Fail: []failRule{{"CreateVolume", 10, codes.Unavailable}}}, nil)
	var failed atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if err := f.injectedFailure("CreateVolume"); err != nil {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	if failed.Load() != 10 {
		t.Fatalf("%d of 50 calls failed, want the first 10", failed.Load())
	}
	if err := f.injectedFailure("DeleteVolume"); err != nil {
		t.Fatalf("a method without a rule failed: %v", err)
	}
}

// Over gRPC: the injected failures come back with the asked-for code and
// say they are injected, the handler does not run for them (the volume
// appears only on the call after them), and other methods are untouched.
func TestFailThenSucceed(t *testing.T) {
	_, p := startFaultyDriver(t, faultConfig{Fail: []failRule{{"CreateVolume", 2, codes.Unavailable}}})
	ctx := context.Background()
	req := &csi.CreateVolumeRequest{Name: "flaky", VolumeCapabilities: []*csi.VolumeCapability{mountCap}}
	for i := range 2 {
		_, err := p.Controller.CreateVolume(ctx, req)
		wantCode(t, err, codes.Unavailable)
		if !strings.Contains(status.Convert(err).Message(), "injected") {
			t.Fatalf("call %d: message %q does not say the failure is injected", i+1, status.Convert(err).Message())
		}
		list, err := p.Controller.ListVolumes(ctx, &csi.ListVolumesRequest{})
		if err != nil || len(list.GetEntries()) != 0 {
			t.Fatalf("after injected failure %d: ListVolumes = %v, %v; want no volumes", i+1, list.GetEntries(), err)
		}
	}
	if _, err := p.Controller.CreateVolume(ctx, req); err != nil {
		t.Fatalf("3rd CreateVolume: %v", err)
	}
}

// N=* fails every call: how a test shows a non-retryable error is not
// retried.
func TestFailAlways(t *testing.T) {
	_, p := startFaultyDriver(t, faultConfig{Fail: []failRule{{"CreateVolume", -1, codes.InvalidArgument}}})
	req := &csi.CreateVolumeRequest{Name: "never", VolumeCapabilities: []*csi.VolumeCapability{mountCap}}
	for range 5 {
		_, err := p.Controller.CreateVolume(context.Background(), req)
		wantCode(t, err, codes.InvalidArgument)
	}
}

func TestParseDelays(t *testing.T) {
	got, err := parseDelays("CreateVolume:2s, DeleteVolume:150ms,")
	if err != nil {
		t.Fatalf("parseDelays: %v", err)
	}
	if len(got) != 2 || got["CreateVolume"] != 2*time.Second || got["DeleteVolume"] != 150*time.Millisecond {
		t.Fatalf("delays = %v", got)
	}
	for _, bad := range []string{
		"CreateVolume",                    // no duration
		"CreateVolume:soon",               // not a duration
		"CreateVolume:-1s",                // negative
		"MakeVolume:1s",                   // not a CSI method
		"CreateVolume:1s,CreateVolume:2s", // ambiguous
	} {
		if _, err := parseDelays(bad); err == nil {
			t.Errorf("parseDelays(%q): no error", bad)
		}
	}
}

// The delay holds the answer back after the work is committed: while the
// caller waits, the volume is already in state.json, and a caller that
// gives up (as a killed agent does) leaves the volume created.
func TestDelayComesAfterTheWork(t *testing.T) {
	opts := testOptions(shortTempDir(t))
	opts.Faults = faultConfig{Delay: map[string]time.Duration{"CreateVolume": time.Hour}}
	d, p := startDriver(t, opts)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := p.Controller.CreateVolume(ctx, &csi.CreateVolumeRequest{
			Name: "slow", VolumeCapabilities: []*csi.VolumeCapability{mountCap}})
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		sf, err := readState(d.store.statePath())
		if err != nil {
			t.Fatalf("read state: %v", err)
		}
		if len(sf.Volumes) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("volume not committed within 10s of the call")
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("CreateVolume answered (%v) within its delay", err)
	default:
	}
	cancel()
	select {
	case err := <-done:
		wantCode(t, err, codes.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatalf("a cancelled caller still waits out the delay")
	}
	// The caller gave up; the volume stays.
	list, err := p.Controller.ListVolumes(context.Background(), &csi.ListVolumesRequest{})
	if err != nil || len(list.GetEntries()) != 1 {
		t.Fatalf("ListVolumes after the caller gave up = %v, %v; want the volume", list.GetEntries(), err)
	}
}

// A delayed call still gets its answer, late; other methods are not
// delayed.
func TestDelayedAnswer(t *testing.T) {
	const delay = 100 * time.Millisecond
	_, p := startFaultyDriver(t, faultConfig{Delay: map[string]time.Duration{"CreateVolume": delay}})
	start := time.Now()
	v := createVolume(t, p, "late", 1<<20)
	if took := time.Since(start); took < delay {
		t.Fatalf("CreateVolume answered after %s, want >= %s", took, delay)
	}
	ctx, cancel := context.WithTimeout(context.Background(), delay/2)
	defer cancel()
	if _, err := p.Controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()}); err != nil {
		t.Fatalf("DeleteVolume, which has no delay: %v", err)
	}
}
