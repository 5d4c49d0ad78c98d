package apiconv

import (
	"testing"

	"github.com/pluginhost/pluginhost/csi"
	"github.com/pluginhost/pluginhost/csi/plugins"
	"github.com/pluginhost/pluginhost/dynamic"
)

func TestCSIInfoRequiresTopologiesFromPluginCapability(t *testing.T) {
	constrained := []string{csi.CapControllerService, csi.CapVolumeAccessibility}
	for _, tc := range []struct {
		name string
		fp   *plugins.Fingerprint
		want bool
	}{
		{"controller advertising", &plugins.Fingerprint{Type: dynamic.PluginTypeCSIController,
			PluginCapabilities: constrained}, true},
		{"node advertising, no segments for this node", &plugins.Fingerprint{Type: dynamic.PluginTypeCSINode,
			PluginCapabilities: constrained, NodeInfo: &plugins.NodeInfo{NodeID: "n1"}}, true},
		{"node advertising with segments", &plugins.Fingerprint{Type: dynamic.PluginTypeCSINode,
			PluginCapabilities: constrained, NodeInfo: &plugins.NodeInfo{NodeID: "n1", Topology: map[string]string{"zone": "a"}}}, true},
		// A topology alone is not the capability: Nomad looks only at
		// GetPluginCapabilities.
		{"node with segments, not advertising", &plugins.Fingerprint{Type: dynamic.PluginTypeCSINode,
			PluginCapabilities: []string{csi.CapControllerService},
			NodeInfo:           &plugins.NodeInfo{NodeID: "n1", Topology: map[string]string{"zone": "a"}}}, false},
		{"controller not advertising", &plugins.Fingerprint{Type: dynamic.PluginTypeCSIController,
			PluginCapabilities: []string{csi.CapControllerService}}, false},
		{"not fingerprinted yet", &plugins.Fingerprint{Type: dynamic.PluginTypeCSINode}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := CSIInfo(tc.fp, false)
			if info.RequiresTopologies != tc.want {
				t.Errorf("RequiresTopologies = %t, want %t", info.RequiresTopologies, tc.want)
			}
		})
	}
}

// Both halves of one driver must agree, which the node-topology rule never
// gave: a controller has no NodeGetInfo.
func TestCSIInfoRequiresTopologiesSameForBothHalves(t *testing.T) {
	caps := []string{csi.CapControllerService, csi.CapVolumeAccessibility, csi.CapVolumeExpansionPrefix + "ONLINE"}
	ctrl := CSIInfo(&plugins.Fingerprint{PluginID: "p", AllocID: "a1", Type: dynamic.PluginTypeCSIController,
		PluginCapabilities: caps, ControllerCapabilities: []string{csi.CapControllerCreateDelete}}, true)
	node := CSIInfo(&plugins.Fingerprint{PluginID: "p", AllocID: "a1", Type: dynamic.PluginTypeCSINode,
		PluginCapabilities: caps, NodeCapabilities: []string{csi.CapNodeStageUnstage},
		NodeInfo: &plugins.NodeInfo{NodeID: "n1"}}, true)
	if !ctrl.RequiresTopologies || !node.RequiresTopologies {
		t.Errorf("RequiresTopologies: controller %t, node %t; want both true", ctrl.RequiresTopologies, node.RequiresTopologies)
	}
	if ctrl.ControllerInfo == nil || ctrl.NodeInfo != nil || node.NodeInfo == nil || node.ControllerInfo != nil {
		t.Errorf("halves: controller %+v, node %+v", ctrl, node)
	}
	if len(ctrl.Capabilities) != len(caps) || len(node.Capabilities) != len(caps) {
		t.Errorf("plugin capabilities: controller %q, node %q", ctrl.Capabilities, node.Capabilities)
	}
}
