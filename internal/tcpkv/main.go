// Command tcpkv is a stand-in for go-plugin's Python example plugin
// (examples/grpc/plugin-python), which needs grpcio: like plugin.py it
// serves go-plugin's example KV service and the gRPC health service
// ("plugin": SERVING) on a loopback TCP port, has no go-plugin controller
// or stdio service, prints the handshake line "1|1|tcp|ADDR|grpc" itself,
// and ends on SIGINT or SIGTERM (Python's KeyboardInterrupt). It lets the
// tests exercise the TCP path on machines without grpcio. Unlike plugin.py
// it picks a free port, so that tests can run side by side.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"

	kvpb "github.com/hashicorp/go-plugin/examples/grpc/proto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

type store struct {
	kvpb.UnimplementedKVServer
	mu sync.Mutex
	m  map[string][]byte
}

func (s *store) Get(_ context.Context, r *kvpb.GetRequest) (*kvpb.GetResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &kvpb.GetResponse{Value: s.m[r.GetKey()]}, nil
}

func (s *store) Put(_ context.Context, r *kvpb.PutRequest) (*kvpb.Empty, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[r.GetKey()] = append(append([]byte{}, r.GetValue()...), "\n\nWritten from tcpkv"...)
	return &kvpb.Empty{}, nil
}

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s := grpc.NewServer()
	kvpb.RegisterKVServer(s, &store{m: map[string][]byte{}})
	hs := health.NewServer()
	hs.SetServingStatus("plugin", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(s, hs)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sigs
		s.Stop()
	}()
	fmt.Printf("1|1|tcp|%s|grpc\n", ln.Addr())
	_ = s.Serve(ln)
}
