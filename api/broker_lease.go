package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/metadata"
)

// go-plugin v1.8's plugin side closes its GRPCBroker for good when the first
// broker stream ends (gRPCBrokerServer.StartStream defers Close): once a
// consumer that opened one goes away, no later consumer's broker callbacks
// work. Nothing outside the plugin can prevent that, so the agent restarts
// the plugin at once, and for that it must learn that such a consumer went
// away. A consumer's broker stream is therefore opened only when the
// program first uses the broker (a host that serves a callback, as
// go-plugin's bidirectional example does), and while it is open the
// consumer holds a lease with the agent (GET /v1/plugin/TYPE/NAME/broker).
// The lease ends when the stream does or the consumer's process exits; the
// agent then restarts the instance. Consumers that never use the broker
// never open a stream, and their exit changes nothing.

// brokerStartStream is go-plugin's GRPCBroker stream method.
const brokerStartStream = "/plugin.GRPCBroker/StartStream"

// brokerLease is a consumer's lease on one instance's broker.
type brokerLease struct {
	c   *Client
	rec PluginReattach
}

// hold takes the lease and keeps it, taking it again if the agent restarts,
// until release is called (or the process exits). It returns once the agent
// first acknowledged it. Its goroutine is owned by the lease: release ends it.
func (l *brokerLease) hold(ctx context.Context) (release func(), err error) {
	path := "/v1/plugin/" + url.PathEscape(l.rec.Type) + "/" + url.PathEscape(l.rec.Name) + "/broker"
	q := url.Values{"alloc": {l.rec.AllocID}, "pid": {strconv.Itoa(l.rec.Pid)}}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	take := func() (io.ReadCloser, error) {
		resp, err := l.c.send(lctx, http.MethodGet, path, q, nil)
		if err != nil {
			return nil, err
		}
		return resp.Body, nil
	}
	body, err := take()
	if err != nil {
		cancel()
		return nil, fmt.Errorf("broker lease for %s/%s: %w", l.rec.Type, l.rec.Name, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait := resolverRetryMin
		for {
			// The body ends when the agent goes away (or refuses, after a
			// restart of the instance: then there is nothing to hold).
			_, _ = io.Copy(io.Discard, body)
			_ = body.Close()
			if lctx.Err() != nil {
				return
			}
			t := time.NewTimer(wait)
			select {
			case <-lctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			wait = min(2*wait, resolverRetryMax)
			b, err := take()
			if errors.Is(err, ErrNotFound) {
				return // the instance is gone: its broker with it
			}
			if err == nil {
				body, wait = b, resolverRetryMin
				continue
			}
			body = io.NopCloser(eofReader{})
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}, nil
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// leasedBrokerStreams is the dial option that makes a consumer's go-plugin
// client open its broker stream only on first use, under a lease.
func leasedBrokerStreams(l *brokerLease) grpc.DialOption {
	return grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn,
		method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		if method != brokerStartStream {
			return streamer(ctx, desc, cc, method, opts...)
		}
		return &lazyBrokerStream{ctx: ctx, cc: cc, open: func() (grpc.ClientStream, func(), error) {
			release, err := l.hold(ctx)
			if err != nil {
				return nil, nil, err
			}
			s, err := streamer(ctx, desc, cc, method, opts...)
			if err != nil {
				release()
				return nil, nil, err
			}
			return s, release, nil
		}, opened: make(chan struct{})}, nil
	})
}

// lazyBrokerStream opens the real broker stream, under a lease, at the
// first message the program's broker sends (it serves a callback).
// go-plugin's broker client calls RecvMsg at once, from its own goroutine:
// until the stream opens that waits, and it ends with the connection.
type lazyBrokerStream struct {
	ctx  context.Context
	cc   *grpc.ClientConn
	open func() (grpc.ClientStream, func(), error)

	once    sync.Once
	opened  chan struct{}
	real    grpc.ClientStream
	release func()
	err     error
}

func (s *lazyBrokerStream) ensure() error {
	s.once.Do(func() {
		s.real, s.release, s.err = s.open()
		close(s.opened)
	})
	return s.err
}

func (s *lazyBrokerStream) Header() (metadata.MD, error) {
	if s.real == nil {
		return nil, nil
	}
	return s.real.Header()
}

func (s *lazyBrokerStream) Trailer() metadata.MD {
	if s.real == nil {
		return nil
	}
	return s.real.Trailer()
}

func (s *lazyBrokerStream) CloseSend() error {
	if s.real == nil {
		return nil
	}
	return s.real.CloseSend()
}

func (s *lazyBrokerStream) Context() context.Context { return s.ctx }

func (s *lazyBrokerStream) SendMsg(m any) error {
	if err := s.ensure(); err != nil {
		return err
	}
	return s.real.SendMsg(m)
}

func (s *lazyBrokerStream) RecvMsg(m any) error {
	if err := s.waitOpened(); err != nil {
		return err
	}
	err := s.real.RecvMsg(m)
	if err != nil {
		// The stream is over, so is the plugin's broker: the lease's end
		// tells the agent.
		s.release()
	}
	return err
}

// waitOpened waits for the stream to open, or the connection to close.
func (s *lazyBrokerStream) waitOpened() error {
	wctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	// Wakes the state wait below when the stream opens; ends with wctx.
	go func() {
		select {
		case <-s.opened:
			cancel()
		case <-wctx.Done():
		}
	}()
	for {
		select {
		case <-s.opened:
			return s.err
		default:
		}
		st := s.cc.GetState()
		if st == connectivity.Shutdown {
			return io.EOF
		}
		if !s.cc.WaitForStateChange(wctx, st) && s.ctx.Err() != nil {
			return s.ctx.Err()
		}
	}
}
