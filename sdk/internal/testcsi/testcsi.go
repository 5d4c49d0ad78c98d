// Package testcsi is the CSI Identity server shared by the sdk's test
// plugins, so that the sdk plugin and the bare baselines serve byte-for-byte
// the same thing and benchmarks compare only the plumbing.
package testcsi

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Name is the CSI driver name the test plugins report.
const Name = "testplugin.pluginhost.io"

// Identity answers GetPluginInfo and Probe; Probes counts Probe calls.
type Identity struct {
	csi.UnimplementedIdentityServer
	Probes atomic.Int64
}

// GetPluginInfo implements csi.IdentityServer.
func (*Identity) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: Name, VendorVersion: "0.0.1"}, nil
}

// GetPluginCapabilities implements csi.IdentityServer.
func (*Identity) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{}, nil
}

// Probe implements csi.IdentityServer.
func (i *Identity) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	i.Probes.Add(1)
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}

// Node reports the serving process's pid as its node ID, which lets tests
// tell which process answered.
type Node struct {
	csi.UnimplementedNodeServer
	Pid int
}

// NodeGetInfo implements csi.NodeServer.
func (n *Node) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: strconv.Itoa(n.Pid)}, nil
}

// InterceptedHeader is the response header Intercept sets on CSI calls, so
// that a test can tell from the client side that Config.ServerOptions
// reached the server.
const InterceptedHeader = "testplugin-intercepted"

// Intercept is a unary server interceptor that names the CSI method it saw
// in InterceptedHeader. Other services (health, go-plugin's own) pass
// untouched, as a real plugin's interceptor would leave them.
func Intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if strings.HasPrefix(info.FullMethod, "/csi.v1.") {
		if err := grpc.SetHeader(ctx, metadata.Pairs(InterceptedHeader, info.FullMethod)); err != nil {
			return nil, err
		}
	}
	return handler(ctx, req)
}
