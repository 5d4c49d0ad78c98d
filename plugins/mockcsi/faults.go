package main

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

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
}

// crashExitCode is what a crash-after exit reports, distinct from the codes
// a caller picks for ExitAtStart and from Go's panic code 2.
const crashExitCode = 75

// faults applies a faultConfig. Latency and CrashAfter concern every CSI
// call alike, so they live in one unary interceptor (installed through
// sdk.Config.ServerOptions) and no handler mentions them. The Probe faults
// decide Probe's answer, so Probe asks for them itself.
type faults struct {
	cfg     faultConfig
	started time.Time
	calls   atomic.Int64
	// exit is os.Exit in the binary; tests substitute a recorder.
	exit func(code int)
	now  func() time.Time
}

func newFaults(cfg faultConfig, exit func(int)) *faults {
	return &faults{cfg: cfg, started: time.Now(), exit: exit, now: time.Now}
}

// intercept runs enter before every CSI call. Health checks, reflection and
// go-plugin's own services pass untouched: a host's health pings must not
// use up CrashAfter or wait out the latency, which is meant for the CSI
// calls a test is exercising.
func (f *faults) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if strings.HasPrefix(info.FullMethod, "/csi.v1.") {
		if err := f.enter(ctx); err != nil {
			return nil, err
		}
	}
	return handler(ctx, req)
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
