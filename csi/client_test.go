package csi

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/pluginhost/pluginhost/csi/internal/csitest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestClientIdentityControllerNode(t *testing.T) {
	p := csitest.NewFakePlugin()
	s := csitest.Serve(t, p, "")
	c := testClient(t, s.Socket, RetryPolicy{})
	ctx := t.Context()

	info, err := c.GetPluginInfo(ctx, &csipb.GetPluginInfoRequest{})
	if err != nil || info.GetName() != "fake.csi.example.com" || info.GetVendorVersion() != "1.2.3" {
		t.Fatalf("GetPluginInfo = %v, %v", info, err)
	}
	if _, err := c.Probe(ctx, &csipb.ProbeRequest{}); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	vol, err := c.CreateVolume(ctx, &csipb.CreateVolumeRequest{Name: "a", CapacityRange: &csipb.CapacityRange{RequiredBytes: 42}})
	if err != nil || vol.GetVolume().GetVolumeId() != "vol-a" || vol.GetVolume().GetCapacityBytes() != 42 {
		t.Fatalf("CreateVolume = %v, %v", vol, err)
	}
	ni, err := c.NodeGetInfo(ctx, &csipb.NodeGetInfoRequest{})
	if err != nil || ni.GetNodeId() != "node-1" {
		t.Fatalf("NodeGetInfo = %v, %v", ni, err)
	}
	// An RPC the driver does not implement surfaces as UNIMPLEMENTED,
	// with context, after exactly one attempt.
	_, err = c.NodeStageVolume(ctx, &csipb.NodeStageVolumeRequest{VolumeId: "v"})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("NodeStageVolume: code %v, want Unimplemented: %v", status.Code(err), err)
	}
	if !strings.Contains(err.Error(), "NodeStageVolume") || !strings.Contains(err.Error(), s.Socket) {
		t.Fatalf("error lacks method or socket: %v", err)
	}
}

func TestClientRetriesRetryableCodes(t *testing.T) {
	for _, code := range []codes.Code{codes.Unavailable, codes.Aborted, codes.DeadlineExceeded} {
		t.Run(code.String(), func(t *testing.T) {
			p := csitest.NewFakePlugin()
			p.Script["Probe"] = []codes.Code{code, code, code}
			s := csitest.Serve(t, p, "")
			c := testClient(t, s.Socket, RetryPolicy{MaxAttempts: 5})
			if _, err := c.Probe(t.Context(), &csipb.ProbeRequest{}); err != nil {
				t.Fatalf("Probe after 3 %v: %v", code, err)
			}
			if n := p.CallCount("Probe"); n != 4 {
				t.Fatalf("Probe called %d times, want 4", n)
			}
		})
	}
}

func TestClientDoesNotRetryTerminalCodes(t *testing.T) {
	for _, code := range []codes.Code{codes.Unimplemented, codes.InvalidArgument, codes.AlreadyExists, codes.NotFound, codes.FailedPrecondition, codes.Internal} {
		t.Run(code.String(), func(t *testing.T) {
			p := csitest.NewFakePlugin()
			p.Always["CreateVolume"] = code
			s := csitest.Serve(t, p, "")
			c := testClient(t, s.Socket, RetryPolicy{MaxAttempts: 5})
			_, err := c.CreateVolume(t.Context(), &csipb.CreateVolumeRequest{Name: "x"})
			if status.Code(err) != code {
				t.Fatalf("code %v, want %v: %v", status.Code(err), code, err)
			}
			if n := p.CallCount("CreateVolume"); n != 1 {
				t.Fatalf("CreateVolume called %d times, want 1", n)
			}
		})
	}
}

func TestClientGivesUpAfterMaxAttempts(t *testing.T) {
	p := csitest.NewFakePlugin()
	p.Always["Probe"] = codes.Unavailable
	s := csitest.Serve(t, p, "")
	c := testClient(t, s.Socket, RetryPolicy{MaxAttempts: 3})
	_, err := c.Probe(t.Context(), &csipb.ProbeRequest{})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("code %v, want Unavailable: %v", status.Code(err), err)
	}
	if n := p.CallCount("Probe"); n != 3 {
		t.Fatalf("Probe called %d times, want 3", n)
	}
	if !strings.Contains(err.Error(), "after 3 attempts") {
		t.Fatalf("error does not count attempts: %v", err)
	}
}

func TestClientRetriesHungAttempt(t *testing.T) {
	p := csitest.NewFakePlugin()
	hang := make(chan struct{})
	p.Hang["Probe"] = hang
	s := csitest.Serve(t, p, "")
	c := testClient(t, s.Socket, RetryPolicy{MaxAttempts: 3, AttemptTimeout: 100 * time.Millisecond})
	// Un-hang Probe once the first attempt is in, so the retry succeeds.
	go func() {
		<-p.Probed
		p.Set(func(p *csitest.FakePlugin) { delete(p.Hang, "Probe") })
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := c.Probe(ctx, &csipb.ProbeRequest{}); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	if n := p.CallCount("Probe"); n < 2 {
		t.Fatalf("Probe called %d times, want a retry after the hung attempt", n)
	}
}

func TestClientCallerDeadlineBoundsRetries(t *testing.T) {
	p := csitest.NewFakePlugin()
	p.Hang["Probe"] = make(chan struct{})
	s := csitest.Serve(t, p, "")
	c := testClient(t, s.Socket, RetryPolicy{MaxAttempts: 100})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := c.Probe(ctx, &csipb.ProbeRequest{})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("code %v, want DeadlineExceeded: %v", status.Code(err), err)
	}
	if n := p.CallCount("Probe"); n != 1 {
		t.Fatalf("Probe called %d times: the caller's deadline must end the call, not an attempt", n)
	}
}

func TestClientDefaultCallTimeout(t *testing.T) {
	p := csitest.NewFakePlugin()
	p.Hang["Probe"] = make(chan struct{})
	s := csitest.Serve(t, p, "")
	c, err := NewClient(ClientConfig{Endpoint: s.Socket, CallTimeout: 150 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// No deadline on the context: the client's own must end the call.
	_, err = c.Probe(context.Background(), &csipb.ProbeRequest{})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("code %v, want DeadlineExceeded: %v", status.Code(err), err)
	}
}

func TestClientCancelDuringBackoff(t *testing.T) {
	p := csitest.NewFakePlugin()
	p.Always["Probe"] = codes.Unavailable
	s := csitest.Serve(t, p, "")
	c := testClient(t, s.Socket, RetryPolicy{MaxAttempts: 10, BaseDelay: time.Minute, MaxDelay: time.Minute})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-p.Probed
		cancel()
	}()
	_, err := c.Probe(ctx, &csipb.ProbeRequest{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled in %v", err)
	}
	if n := p.CallCount("Probe"); n != 1 {
		t.Fatalf("Probe called %d times after cancel", n)
	}
}

func TestClientSurvivesPluginRestart(t *testing.T) {
	p := csitest.NewFakePlugin()
	s := csitest.Serve(t, p, "")
	c := testClient(t, s.Socket, RetryPolicy{MaxAttempts: 50, BaseDelay: 10 * time.Millisecond, MaxDelay: 100 * time.Millisecond})
	if _, err := c.Probe(t.Context(), &csipb.ProbeRequest{}); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	// Same socket path, new process-like server: the client reconnects by
	// itself, within its retries.
	csitest.Serve(t, p, s.Socket)
	if _, err := c.Probe(t.Context(), &csipb.ProbeRequest{}); err != nil {
		t.Fatalf("Probe after plugin restart: %v", err)
	}
}

func TestClientNoPlugin(t *testing.T) {
	c := testClient(t, csitest.ShortDir(t)+"/absent.sock", RetryPolicy{MaxAttempts: 2})
	_, err := c.Probe(t.Context(), &csipb.ProbeRequest{})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("code %v, want Unavailable: %v", status.Code(err), err)
	}
}

// A nil request is sent as an empty message, not a panic.
func TestClientNilRequest(t *testing.T) {
	s := csitest.Serve(t, csitest.NewFakePlugin(), "")
	c := testClient(t, s.Socket, RetryPolicy{})
	if _, err := c.Probe(t.Context(), nil); err != nil {
		t.Fatalf("Probe(nil): %v", err)
	}
	if _, err := c.CreateVolume(t.Context(), nil); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("CreateVolume(nil): %v, want the driver's InvalidArgument", err)
	}
}

// A client over a borrowed connection (the supervisor on go-plugin's) calls
// through it and leaves it open on Close: the owner closes it.
func TestClientBorrowedConn(t *testing.T) {
	p := csitest.NewFakePlugin()
	s := csitest.Serve(t, p, "")
	owner := testClient(t, s.Socket, RetryPolicy{})
	c, err := NewClient(ClientConfig{Endpoint: s.Socket, Conn: owner.conn})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := c.Probe(ctx, &csipb.ProbeRequest{}); err != nil {
		t.Fatalf("Probe over the borrowed connection: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := owner.Probe(ctx, &csipb.ProbeRequest{}); err != nil {
		t.Fatalf("the owner's connection after the borrower closed: %v", err)
	}
	if n := p.CallCount("Probe"); n != 2 {
		t.Fatalf("plugin saw %d Probes, want 2", n)
	}
}

// TestJoinErrorsIsOneLine: errors that end up in tables and events are one
// line, and every joined error stays reachable.
func TestJoinErrorsIsOneLine(t *testing.T) {
	a, b := errors.New("first"), context.DeadlineExceeded
	err := JoinErrors(a, nil, b)
	if strings.Contains(err.Error(), "\n") || err.Error() != "first; context deadline exceeded" {
		t.Fatalf("JoinErrors text %q", err.Error())
	}
	if !errors.Is(err, a) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("joined errors not reachable")
	}
	if JoinErrors(nil, nil) != nil || JoinErrors(a) != a {
		t.Fatal("JoinErrors of one or none")
	}
	if got := JoinErrors(errors.Join(a, b), a).Error(); strings.Contains(got, "\n") {
		t.Fatalf("an inner errors.Join kept its newline: %q", got)
	}
}
