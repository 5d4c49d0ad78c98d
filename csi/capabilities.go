package csi

import (
	"fmt"
	"slices"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
)

// Capabilities are kept as readable strings ("CREATE_DELETE_VOLUME") because
// they are shown to users and compared by name, and because a string can
// hold what an enum cannot: values this spec version no longer names (see
// retiredControllerRPCNames) and values it does not know at all (a newer
// driver). The latter are kept as "UNKNOWN(n)" rather than dropped, so that
// `plugin status` shows what the driver really said. Every list is sorted
// and free of duplicates; entries with nil fields say nothing and are
// skipped.

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

// More controller capability names, the ones the volume code checks
// before it calls.
const (
	CapCreateDeleteSnapshot = "CREATE_DELETE_SNAPSHOT"
	CapListSnapshots        = "LIST_SNAPSHOTS"
	CapListVolumes          = "LIST_VOLUMES"
	CapExpandVolume         = "EXPAND_VOLUME"
	CapCloneVolume          = "CLONE_VOLUME"
)

// Values the spec once defined and has since reserved, so that the Go
// bindings no longer name them. Drivers built against an older spec still
// send them, and "UNKNOWN(11)" would make a well-known capability look like
// a driver bug. From csi.proto of spec v1.13.0 (the version in go.mod):
//
//	ControllerServiceCapability.RPC.Type:
//	  // Value 11 was VOLUME_CONDITION, an alpha API that has been removed.
//	  reserved 11;
//	NodeServiceCapability.RPC.Type:
//	  // Value 4 was VOLUME_CONDITION, an alpha API that has been removed.
//	  reserved 4;
//
// These are the only reserved enum values in that file; PluginCapability
// and GroupControllerServiceCapability have none. Reserved numbers are never
// reused, so the tables cannot come to contradict newer bindings. Read-only.
var (
	retiredControllerRPCNames = map[int32]string{11: "VOLUME_CONDITION"}
	retiredNodeRPCNames       = map[int32]string{4: "VOLUME_CONDITION"}
)

// enumName names v from the generated name table, then from the retired
// names (nil when the enum has none). 0 (the spec's UNKNOWN placeholder) and
// values neither table names become "UNKNOWN(n)".
func enumName(names, retired map[int32]string, v int32) string {
	if v != 0 {
		if n, ok := names[v]; ok {
			return n
		}
		if n, ok := retired[v]; ok {
			return n
		}
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
			out = append(out, enumName(csipb.PluginCapability_Service_Type_name, nil, int32(c.GetService().GetType())))
		case c.GetVolumeExpansion() != nil:
			out = append(out, CapVolumeExpansionPrefix+enumName(csipb.PluginCapability_VolumeExpansion_Type_name, nil, int32(c.GetVolumeExpansion().GetType())))
		}
	}
	return sortedSet(out)
}

// ControllerCapabilityNames renders ControllerGetCapabilities' answer.
func ControllerCapabilityNames(caps []*csipb.ControllerServiceCapability) []string {
	out := make([]string, 0, len(caps))
	for _, c := range caps {
		if rpc := c.GetRpc(); rpc != nil {
			out = append(out, enumName(csipb.ControllerServiceCapability_RPC_Type_name, retiredControllerRPCNames, int32(rpc.GetType())))
		}
	}
	return sortedSet(out)
}

// NodeCapabilityNames renders NodeGetCapabilities' answer.
func NodeCapabilityNames(caps []*csipb.NodeServiceCapability) []string {
	out := make([]string, 0, len(caps))
	for _, c := range caps {
		if rpc := c.GetRpc(); rpc != nil {
			out = append(out, enumName(csipb.NodeServiceCapability_RPC_Type_name, retiredNodeRPCNames, int32(rpc.GetType())))
		}
	}
	return sortedSet(out)
}
