package main

import (
	"context"
	"fmt"
	"regexp"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// driverNameRE is the CSI rule for plugin names (csi-sanity checks it too):
// at most 63 characters, alphanumerics plus '-', '.', '_' inside.
var driverNameRE = regexp.MustCompile(`^[a-zA-Z][A-Za-z0-9-._]{0,61}[a-zA-Z]$`)

func validateDriverName(name string) error {
	if !driverNameRE.MatchString(name) {
		return fmt.Errorf("driver name %q is not a valid CSI plugin name (%s)", name, driverNameRE)
	}
	return nil
}

type identityServer struct {
	csi.UnimplementedIdentityServer
	d *driver
}

func (s *identityServer) GetPluginInfo(_ context.Context, _ *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{
		Name:          s.d.name,
		VendorVersion: version,
		Manifest:      map[string]string{"node_id": s.d.nodeID, "mount_method": s.d.mounter.method},
	}, nil
}

func (s *identityServer) GetPluginCapabilities(_ context.Context, _ *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{
		Capabilities: []*csi.PluginCapability{
			{Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{
				Type: csi.PluginCapability_Service_CONTROLLER_SERVICE,
			}}},
			{Type: &csi.PluginCapability_VolumeExpansion_{VolumeExpansion: &csi.PluginCapability_VolumeExpansion{
				Type: csi.PluginCapability_VolumeExpansion_ONLINE,
			}}},
		},
	}, nil
}

// Probe always sets ready explicitly: an unset ready means "ready" to the
// CO, so a plugin that is still starting must say false, not stay silent.
func (s *identityServer) Probe(ctx context.Context, _ *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	ready, err := s.d.faults.probe(ctx)
	if err != nil {
		return nil, err
	}
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(ready)}, nil
}
