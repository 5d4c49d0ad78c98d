package driver

import (
	"context"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/metadata"
)

// BrokerStartStream is go-plugin's GRPCBroker stream method.
const BrokerStartStream = "/plugin.GRPCBroker/StartStream"

// noBrokerStream keeps the agent's own go-plugin gRPC clients from opening
// a GRPCBroker stream to the plugin. go-plugin v1.8's plugin side closes its
// broker for good when the first broker stream ends (gRPCBrokerServer.
// StartStream defers Close), so the agent's stream, ending with the agent
// (kill -9, a restart, Detach), would break broker callbacks for every
// consumer of a re-adopted plugin. The agent never uses the broker; its
// client gets a stream that never reaches the plugin and ends when the
// connection does.
func noBrokerStream() grpc.DialOption {
	return grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn,
		method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		if method == BrokerStartStream {
			return &idleStream{ctx: ctx, cc: cc}, nil
		}
		return streamer(ctx, desc, cc, method, opts...)
	})
}

// idleStream is a broker stream that sends nothing anywhere and receives
// nothing: go-plugin's broker client goroutine blocks in RecvMsg until the
// connection is closed (Kill, Detach), as it would on a real stream.
type idleStream struct {
	ctx context.Context
	cc  *grpc.ClientConn
}

func (s *idleStream) Header() (metadata.MD, error) { return nil, nil }
func (s *idleStream) Trailer() metadata.MD         { return nil }
func (s *idleStream) CloseSend() error             { return nil }
func (s *idleStream) Context() context.Context     { return s.ctx }
func (s *idleStream) SendMsg(any) error            { return nil }

func (s *idleStream) RecvMsg(any) error {
	for {
		st := s.cc.GetState()
		if st == connectivity.Shutdown {
			return io.EOF
		}
		if !s.cc.WaitForStateChange(s.ctx, st) {
			return s.ctx.Err()
		}
	}
}
