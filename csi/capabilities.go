package csi

import (
	"fmt"
	"slices"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
)

// Capabilities are kept as readable strings ("CREATE_DELETE_VOLUME") because
// they are shown to users and compared by name, and because a string can
// hold what an enum cannot: values this spec version does not know (a newer
// driver) or no longer knows (VOLUME_CONDITION, dropped from the Go bindings).
// Those are kept as "UNKNOWN(n)" rather than dropped, so that `plugin
// status` shows what the driver really said. Every list is sorted and free of
// duplicates; entries with nil fields say nothing and are skipped.

// Plugin capability names. Volume expansion modes are prefixed so that they
// cannot collide with service names.
const (
	CapControllerService      = "CONTROLLER_SERVICE"
	CapVolumeAccessibility    = "VOLUME_ACCESSIBILITY_CONSTRAINTS"
	CapVolumeExpansionPrefix  = "VOLUME_EXPANSION_"
	CapControllerCreateDelete = "CREATE_DELETE_VOLUME"
	CapControllerPublish      = "PUBLISH_UNPUBLISH_VOLUME"
	CapNodeStageUnstage       = "STAGE_UNSTAGE_VOLUME"
)

// enumName names v from the generated name table; 0 (the spec's UNKNOWN
// placeholder) and values missing from the table both become "UNKNOWN(n)".
func enumName(names map[int32]string, v int32) string {
	if n, ok := names[v]; ok && v != 0 {
		return n
	}
	return fmt.Sprintf("UNKNOWN(%d)", v)
}

// sortedSet sorts and dedups in place.
func sortedSet(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// PluginCapabilityNames renders GetPluginCapabilities' answer.
func PluginCapabilityNames(caps []*csipb.PluginCapability) []string {
	out := make([]string, 0, len(caps))
	for _, c := range caps {
		switch {
		case c.GetService() != nil:
			out = append(out, enumName(csipb.PluginCapability_Service_Type_name, int32(c.GetService().GetType())))
		case c.GetVolumeExpansion() != nil:
			out = append(out, CapVolumeExpansionPrefix+enumName(csipb.PluginCapability_VolumeExpansion_Type_name, int32(c.GetVolumeExpansion().GetType())))
		}
	}
	return sortedSet(out)
}

// ControllerCapabilityNames renders ControllerGetCapabilities' answer.
func ControllerCapabilityNames(caps []*csipb.ControllerServiceCapability) []string {
	out := make([]string, 0, len(caps))
	for _, c := range caps {
		if rpc := c.GetRpc(); rpc != nil {
			out = append(out, enumName(csipb.ControllerServiceCapability_RPC_Type_name, int32(rpc.GetType())))
		}
	}
	return sortedSet(out)
}

// NodeCapabilityNames renders NodeGetCapabilities' answer.
func NodeCapabilityNames(caps []*csipb.NodeServiceCapability) []string {
	out := make([]string, 0, len(caps))
	for _, c := range caps {
		if rpc := c.GetRpc(); rpc != nil {
			out = append(out, enumName(csipb.NodeServiceCapability_RPC_Type_name, int32(rpc.GetType())))
		}
	}
	return sortedSet(out)
}
