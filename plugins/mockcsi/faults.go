package main

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// faultConfig is the misbehaviour pluginhost's own tests ask for. The zero
// value is a well-behaved plugin.
type faultConfig struct {
	ProbeFail   bool          // Probe returns FAILED_PRECONDITION
	ProbeDelay  time.Duration // Probe sleeps this long (bounded by the caller's deadline)
	NotReadyFor time.Duration // Probe says ready=false until this long after start
	Latency     time.Duration // added to every RPC
	CrashAfter  int           // exit after this many RPCs have been answered (0: never)
	ExitAtStart *int          // exit with this code before serving (nil: don't)
	// Fail makes the first calls of a method fail; at most one rule per
	// method (parseFailRules).
	Fail []failRule
	// Delay holds a method's answer back this long after its handler has
	// done its work (bounded by the caller's deadline), keyed by method.
	Delay map[string]time.Duration
}

// failRule: the first Times calls of Method fail with Code; Times < 0 means
// every call.
type failRule struct {
	Method string
	Times  int
	Code   codes.Code
}

// crashExitCode is what a crash-after exit reports, distinct from the codes
// a caller picks for ExitAtStart and from Go's panic code 2.
const crashExitCode = 75

// faults applies a faultConfig. Latency, CrashAfter, Fail and Delay concern
// every CSI call alike, so they live in one unary interceptor (installed
// through sdk.Config.ServerOptions) and no handler mentions them. The Probe
// faults decide Probe's answer, so Probe asks for them itself.
type faults struct {
	cfg     faultConfig
	started time.Time
	calls   atomic.Int64
	// fail and failCalls are keyed by method name and never change after
	// newFaults, so concurrent calls need no lock to read them; each rule
	// counts its method's calls in an atomic.
	fail      map[string]failRule
	failCalls map[string]*atomic.Int64
	// exit is os.Exit in the binary; tests substitute a recorder.
	exit func(code int)
	now  func() time.Time
}

func newFaults(cfg faultConfig, exit func(int)) *faults {
	f := &faults{cfg: cfg, started: time.Now(), exit: exit, now: time.Now,
		fail: map[string]failRule{}, failCalls: map[string]*atomic.Int64{}}
	for _, r := range cfg.Fail {
		f.fail[r.Method] = r
		f.failCalls[r.Method] = new(atomic.Int64)
	}
	return f
}

// intercept runs enter and the fail rules before every CSI call and the
// delay after it. Health checks, reflection and go-plugin's own services
// pass untouched: a host's health pings must not use up CrashAfter or wait
// out the latency, which is meant for the CSI calls a test is exercising.
func (f *faults) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if !strings.HasPrefix(info.FullMethod, "/csi.v1.") {
		return handler(ctx, req)
	}
	if err := f.enter(ctx); err != nil {
		return nil, err
	}
	method := path.Base(info.FullMethod)
	// An injected failure stands in for the handler: the call did nothing,
	// as a plugin that failed early would have.
	if err := f.injectedFailure(method); err != nil {
		return nil, err
	}
	resp, err := handler(ctx, req)
	// The delay comes after the handler has committed its work, unlike
	// Latency: it opens the window in which the plugin has done what was
	// asked but the caller has no answer yet, where a test kills the
	// caller to see it recover from an outcome it never heard.
	if err := sleepCtx(ctx, f.cfg.Delay[method]); err != nil {
		return nil, err
	}
	return resp, err
}

// injectedFailure counts a call of method and returns the error its fail
// rule asks for, if any.
func (f *faults) injectedFailure(method string) error {
	r, ok := f.fail[method]
	if !ok {
		return nil
	}
	n := f.failCalls[method].Add(1)
	if r.Times >= 0 && n > int64(r.Times) {
		return nil
	}
	limit := "every call"
	if r.Times >= 0 {
		limit = fmt.Sprintf("call %d of %d", n, r.Times)
	}
	return status.Errorf(r.Code, "mockcsi: injected failure of %s, %s (%s)", method, limit, envFail)
}

// enter is called at the start of every CSI call: it adds the configured latency
// and counts the call towards CrashAfter. The call that goes past the limit
// kills the process before it is answered, the way a crashing plugin
// leaves its caller with UNAVAILABLE.
func (f *faults) enter(ctx context.Context) error {
	if f.cfg.CrashAfter > 0 && f.calls.Add(1) > int64(f.cfg.CrashAfter) {
		f.exit(crashExitCode)
		return status.Error(codes.Unavailable, "mockcsi: crashing on purpose")
	}
	return sleepCtx(ctx, f.cfg.Latency)
}

// probe returns Probe's answer under the configured faults: an error means
// unhealthy, ready=false means still starting.
func (f *faults) probe(ctx context.Context) (ready bool, err error) {
	if err := sleepCtx(ctx, f.cfg.ProbeDelay); err != nil {
		return false, err
	}
	if f.cfg.ProbeFail {
		return false, status.Error(codes.FailedPrecondition, "mockcsi: probe failing on purpose (MOCKCSI_PROBE_FAIL)")
	}
	return f.now().Sub(f.started) >= f.cfg.NotReadyFor, nil
}

// exitAtStart exits before serving when asked to; it reports whether it did
// (only tests see true, since exit does not return in the binary).
func (f *faults) exitAtStart() bool {
	if f.cfg.ExitAtStart == nil {
		return false
	}
	f.exit(*f.cfg.ExitAtStart)
	return true
}

// sleepCtx waits d or until ctx ends, whichever is first, so that injected
// delays never outlive the caller's deadline.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

// parseFailRules reads a comma-separated list of Method:N:CODE (see
// doc.go). It rejects what would otherwise silently never fire: a method
// mockcsi does not serve, a code that is not an error, a method named
// twice.
func parseFailRules(spec string) ([]failRule, error) {
	var rules []failRule
	seen := map[string]bool{}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		parts := strings.Split(item, ":")
		if len(parts) != 3 {
			return nil, fmt.Errorf("%q: want Method:N:CODE, such as CreateVolume:3:UNAVAILABLE", item)
		}
		method, times, code := strings.TrimSpace(parts[0]), strings.TrimSpace(parts[1]), strings.TrimSpace(parts[2])
		if err := checkMethod(method); err != nil {
			return nil, fmt.Errorf("%q: %w", item, err)
		}
		if seen[method] {
			return nil, fmt.Errorf("%q: %s has a rule already", item, method)
		}
		seen[method] = true
		r := failRule{Method: method}
		switch n, err := strconv.Atoi(times); {
		case times == "*":
			r.Times = -1
		case err != nil || n < -1:
			return nil, fmt.Errorf("%q: N must be a count, or * or -1 for every call", item)
		default:
			r.Times = n
		}
		c, err := parseCode(code)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", item, err)
		}
		r.Code = c
		rules = append(rules, r)
	}
	return rules, nil
}

// checkMethod accepts the CSI methods mockcsi serves, by their names in the
// spec (CreateVolume, NodeStageVolume, ...).
func checkMethod(name string) error {
	for _, sd := range []grpc.ServiceDesc{csi.Identity_ServiceDesc, csi.Controller_ServiceDesc, csi.Node_ServiceDesc} {
		for _, m := range sd.Methods {
			if m.MethodName == name {
				return nil
			}
		}
	}
	return fmt.Errorf("%q is not a CSI method mockcsi serves", name)
}

// parseCode reads a gRPC code by name in either spelling: the spec's
// canonical UNAVAILABLE or FAILED_PRECONDITION, or Go's Unavailable or
// FailedPrecondition (codes.Code.String). OK is refused: it is no failure.
func parseCode(name string) (codes.Code, error) {
	norm := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "")) }
	want := norm(name)
	if want == "cancelled" { // the canonical spelling; Go's is Canceled
		return codes.Canceled, nil
	}
	for c := codes.Code(1); c <= codes.Unauthenticated; c++ {
		if norm(c.String()) == want {
			return c, nil
		}
	}
	if want == "ok" {
		return 0, fmt.Errorf("code OK is not a failure")
	}
	return 0, fmt.Errorf("%q is not a gRPC code name (such as UNAVAILABLE, INTERNAL, INVALID_ARGUMENT)", name)
}

// parseDelays reads a comma-separated list of Method:duration (see doc.go).
func parseDelays(spec string) (map[string]time.Duration, error) {
	delays := map[string]time.Duration{}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		method, dur, ok := strings.Cut(item, ":")
		if !ok {
			return nil, fmt.Errorf("%q: want Method:duration, such as CreateVolume:2s", item)
		}
		method = strings.TrimSpace(method)
		if err := checkMethod(method); err != nil {
			return nil, fmt.Errorf("%q: %w", item, err)
		}
		if _, dup := delays[method]; dup {
			return nil, fmt.Errorf("%q: %s has a delay already", item, method)
		}
		d, err := time.ParseDuration(strings.TrimSpace(dur))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("%q: want a non-negative duration such as 2s", item)
		}
		delays[method] = d
	}
	return delays, nil
}
