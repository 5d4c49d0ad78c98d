package sdk_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/container-storage-interface/spec/lib/go/csi"
	hclog "github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/pluginhost/pluginhost/sdk"
	"github.com/pluginhost/pluginhost/sdk/sdkcsi"
)

// helloIdentity is the smallest useful CSI plugin: it only says who it is.
type helloIdentity struct {
	csi.UnimplementedIdentityServer
}

func (helloIdentity) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: "hello.example.com", VendorVersion: "1.0.0"}, nil
}

// A plugin's main function. Under pluginhost it speaks go-plugin; under
// Nomad's raw_exec or in a Kubernetes pod it serves --endpoint or
// $CSI_ENDPOINT; either way SIGTERM stops it gracefully.
func ExampleMain() {
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	endpoint := sdk.EndpointFlag(fs)
	_ = fs.Parse(os.Args[1:])

	sdk.Main(sdk.Config{
		Name:     "hello",
		CSI:      sdkcsi.Services{Identity: helloIdentity{}},
		Endpoint: *endpoint,
	})
}

// Serving a plugin as an ordinary CSI driver and calling it with a plain
// gRPC client, as a container orchestrator would.
func Example() {
	dir, err := os.MkdirTemp("", "sdk-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "csi.sock")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- sdk.ServeStandalone(ctx, sdk.Config{
			Name:     "hello",
			CSI:      sdkcsi.Services{Identity: helloIdentity{}},
			Endpoint: "unix://" + sock,
			Logger:   hclog.NewNullLogger(),
		})
	}()

	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	// WaitForReady: the server may not be listening yet.
	info, err := csi.NewIdentityClient(conn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{}, grpc.WaitForReady(true))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(info.GetName(), info.GetVendorVersion())

	cancel()
	fmt.Println("stopped:", <-done)
	// Output:
	// hello.example.com 1.0.0
	// stopped: <nil>
}
