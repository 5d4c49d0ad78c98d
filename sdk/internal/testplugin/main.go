// Command testplugin is a tiny CSI plugin built with the sdk for the sdk's own
// tests. Besides CSI Identity and Node it registers grpc.testing.TestService
// as an extra service: EmptyCall writes a log line (to prove logging still
// works with no host), UnaryCall writes ResponseSize bytes to os.Stdout and
// os.Stderr (to prove such writes never block) and reports what happened.
// Its ServerOptions carry testcsi.Intercept, which marks every CSI response.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	hclog "github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/pluginhost/pluginhost/sdk"
	"github.com/pluginhost/pluginhost/sdk/internal/testcsi"
	"github.com/pluginhost/pluginhost/sdk/sdkcsi"
)

type chatter struct {
	testpb.UnimplementedTestServiceServer
	log hclog.Logger
}

func (c *chatter) EmptyCall(context.Context, *testpb.Empty) (*testpb.Empty, error) {
	c.log.Info("empty call", "pid", os.Getpid())
	return &testpb.Empty{}, nil
}

func (c *chatter) UnaryCall(_ context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	buf := []byte(strings.Repeat("x", int(req.GetResponseSize())))
	nOut, errOut := os.Stdout.Write(buf)
	nErr, errErr := os.Stderr.Write(buf)
	return &testpb.SimpleResponse{
		Username: fmt.Sprintf("stdout=%d(%v) stderr=%d(%v)", nOut, errOut, nErr, errErr),
	}, nil
}

func main() {
	fs := flag.NewFlagSet("testplugin", flag.ExitOnError)
	endpoint := sdk.EndpointFlag(fs)
	_ = fs.Parse(os.Args[1:])

	log := sdk.NewLogger("testplugin")
	sdk.Main(sdk.Config{
		Name: "testplugin",
		CSI:  sdkcsi.Services{Identity: &testcsi.Identity{}, Node: &testcsi.Node{Pid: os.Getpid()}},
		Register: func(s *grpc.Server) {
			testpb.RegisterTestServiceServer(s, &chatter{log: log})
		},
		ServerOptions: []grpc.ServerOption{grpc.ChainUnaryInterceptor(testcsi.Intercept)},
		Endpoint:      *endpoint,
		Logger:        log,
	})
}
