package sdk_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	hclog "github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/pluginhost/pluginhost/sdk"
	"github.com/pluginhost/pluginhost/sdk/internal/testcsi"
	"github.com/pluginhost/pluginhost/sdk/sdkcsi"
)

// slowService blocks UnaryCall until release is closed, and says when a
// call has arrived.
type slowService struct {
	testpb.UnimplementedTestServiceServer
	arrived chan struct{}
	release chan struct{}
}

func (s *slowService) UnaryCall(ctx context.Context, _ *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	s.arrived <- struct{}{}
	select {
	case <-s.release:
		return &testpb.SimpleResponse{Username: "finished"}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type stoppable struct {
	cancel context.CancelFunc
	done   chan error
	chat   testpb.TestServiceClient
	ident  csi.IdentityClient
	slow   *slowService
}

func serveSlow(t *testing.T, stopTimeout time.Duration) *stoppable {
	t.Helper()
	slow := &slowService{arrived: make(chan struct{}, 1), release: make(chan struct{})}
	sock := filepath.Join(shortDir(t), "csi.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- sdk.ServeStandalone(ctx, sdk.Config{
			CSI:         sdkcsi.Services{Identity: &testcsi.Identity{}},
			Register:    func(s *grpc.Server) { testpb.RegisterTestServiceServer(s, slow) },
			Endpoint:    sock,
			Logger:      hclog.NewNullLogger(),
			StopTimeout: stopTimeout,
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	conn := plainConn(t, sock)
	return &stoppable{cancel: cancel, done: done, chat: testpb.NewTestServiceClient(conn),
		ident: csi.NewIdentityClient(conn), slow: slow}
}

// startSlowCall starts a call that blocks in the handler and returns its result channel.
func (s *stoppable) startSlowCall(t *testing.T) chan error {
	t.Helper()
	res := make(chan error, 1)
	go func() {
		_, err := s.chat.UnaryCall(context.Background(), &testpb.SimpleRequest{}, grpc.WaitForReady(true))
		res <- err
	}()
	<-s.slow.arrived
	return res
}

// A stop lets the in-flight call finish, refuses new calls with UNAVAILABLE
// meanwhile, and returns once the last call is done.
func TestStopDrainsInFlightCalls(t *testing.T) {
	s := serveSlow(t, time.Minute)
	res := s.startSlowCall(t)
	s.cancel()

	// New calls are refused while draining (retry until the stop has begun:
	// cancel only asks for it).
	ctx := ctxT(t)
	for {
		_, err := s.ident.Probe(ctx, &csi.ProbeRequest{})
		if status.Code(err) == codes.Unavailable {
			break
		}
		if err != nil {
			t.Fatalf("Probe while stopping = %v, want Unavailable", err)
		}
		select {
		case err := <-s.done:
			t.Fatalf("server stopped (%v) with a call in flight", err)
		default:
		}
	}
	close(s.slow.release)
	if err := <-res; err != nil {
		t.Fatalf("in-flight call = %v, want it to finish", err)
	}
	if err := <-s.done; err != nil {
		t.Fatalf("ServeStandalone = %v", err)
	}
	s.done <- nil // for cleanup
}

// A call that outlives StopTimeout is cut, and the stop does not wait longer.
func TestStopCutsCallsAfterTimeout(t *testing.T) {
	s := serveSlow(t, 50*time.Millisecond)
	res := s.startSlowCall(t)
	s.cancel()
	if err := <-s.done; err != nil {
		t.Fatalf("ServeStandalone = %v", err)
	}
	s.done <- nil
	if err := <-res; err == nil {
		t.Fatal("call survived a hard stop")
	}
}
