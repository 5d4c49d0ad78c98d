package sdk_test

import (
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/pluginhost/pluginhost/sdk/internal/testcsi"
	"github.com/pluginhost/pluginhost/sdk/sdktest"
)

// Config.ServerOptions must reach the gRPC server in both modes: testplugin
// passes testcsi.Intercept there, which marks each CSI response with a
// header naming the method. A mode that dropped the options would answer
// the call without the header.
func TestServerOptionsInterceptBothModes(t *testing.T) {
	modes := []struct {
		name string
		conn func(t *testing.T) *grpc.ClientConn
	}{
		{"go-plugin", func(t *testing.T) *grpc.ClientConn {
			return sdktest.Start(t, bins.TestPlugin).Conn
		}},
		{"standalone", func(t *testing.T) *grpc.ClientConn {
			sock := filepath.Join(shortDir(t), "csi.sock")
			s := startStandalone(t, nil, "--endpoint", sock)
			s.waitLine(t, "serving standalone")
			return plainConn(t, sock)
		}},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			conn := m.conn(t)
			var hdr metadata.MD
			_, err := csi.NewNodeClient(conn).NodeGetInfo(ctxT(t), &csi.NodeGetInfoRequest{}, grpc.Header(&hdr))
			if err != nil {
				t.Fatalf("NodeGetInfo: %v", err)
			}
			const want = "/csi.v1.Node/NodeGetInfo"
			if got := hdr.Get(testcsi.InterceptedHeader); len(got) != 1 || got[0] != want {
				t.Fatalf("header %s = %q, want [%q]: the interceptor from ServerOptions did not run",
					testcsi.InterceptedHeader, got, want)
			}
		})
	}
}
