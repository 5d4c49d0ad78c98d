package csi

import (
	"slices"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/pluginhost/pluginhost/csi/internal/csitest"
)

func TestCapabilityNamesAcceptOddLists(t *testing.T) {
	plugin := PluginCapabilityNames([]*csipb.PluginCapability{
		csitest.SvcCap(csipb.PluginCapability_Service_CONTROLLER_SERVICE),
		csitest.SvcCap(csipb.PluginCapability_Service_CONTROLLER_SERVICE), // duplicate
		csitest.SvcCap(csipb.PluginCapability_Service_Type(42)),           // from a newer spec
		csitest.SvcCap(0), // the spec's UNKNOWN placeholder
		nil,               // nil entry
		{},                // no type set
		{Type: &csipb.PluginCapability_Service_{}}, // nil service
		{Type: &csipb.PluginCapability_VolumeExpansion_{VolumeExpansion: &csipb.PluginCapability_VolumeExpansion{Type: csipb.PluginCapability_VolumeExpansion_ONLINE}}},
	})
	want := []string{"CONTROLLER_SERVICE", "UNKNOWN(0)", "UNKNOWN(42)", "VOLUME_EXPANSION_ONLINE"}
	if !slices.Equal(plugin, want) {
		t.Errorf("plugin caps = %q, want %q", plugin, want)
	}

	ctrl := ControllerCapabilityNames([]*csipb.ControllerServiceCapability{
		csitest.CtrlCap(csipb.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME),
		csitest.CtrlCap(11), // VOLUME_CONDITION, reserved in the spec, unnamed in the Go bindings
		csitest.CtrlCap(csipb.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME),
		csitest.CtrlCap(4), // named by the controller enum (GET_CAPACITY), not the node one
		csitest.CtrlCap(99),
		{Type: &csipb.ControllerServiceCapability_Rpc{}},
		nil,
	})
	if want := []string{"CREATE_DELETE_VOLUME", "GET_CAPACITY", "UNKNOWN(99)", "VOLUME_CONDITION"}; !slices.Equal(ctrl, want) {
		t.Errorf("controller caps = %q, want %q", ctrl, want)
	}

	node := NodeCapabilityNames([]*csipb.NodeServiceCapability{
		csitest.NodeCap(csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS),
		csitest.NodeCap(4),  // VOLUME_CONDITION
		csitest.NodeCap(11), // VOLUME_CONDITION's controller number names nothing here
		csitest.NodeCap(csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME),
		{},
	})
	if want := []string{"GET_VOLUME_STATS", "STAGE_UNSTAGE_VOLUME", "UNKNOWN(11)", "VOLUME_CONDITION"}; !slices.Equal(node, want) {
		t.Errorf("node caps = %q, want %q", node, want)
	}
	if got := NodeCapabilityNames(nil); len(got) != 0 {
		t.Errorf("nil list = %q", got)
	}
}

// A bindings upgrade that names a retired number again would leave the
// retired table silently dead (or, if the spec broke its reservation, wrong):
// this says so at the upgrade.
func TestRetiredNamesAreUnnamedInBindings(t *testing.T) {
	for _, tc := range []struct {
		enum             string
		retired, current map[int32]string
	}{
		{"ControllerServiceCapability.RPC.Type", retiredControllerRPCNames, csipb.ControllerServiceCapability_RPC_Type_name},
		{"NodeServiceCapability.RPC.Type", retiredNodeRPCNames, csipb.NodeServiceCapability_RPC_Type_name},
	} {
		for v, name := range tc.retired {
			if cur, ok := tc.current[v]; ok {
				t.Errorf("%s %d: retired as %s, but the bindings name it %s", tc.enum, v, name, cur)
			}
		}
	}
}
