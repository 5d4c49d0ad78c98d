package volumes

import (
	csipb "github.com/container-storage-interface/spec/lib/go/csi"
)

// Access and attachment modes as written in volume and job files (Nomad's
// spelling), mapped to the CSI spec's.
var accessModes = map[string]csipb.VolumeCapability_AccessMode_Mode{
	"single-node-reader-only":  csipb.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
	"single-node-writer":       csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
	"multi-node-reader-only":   csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY,
	"multi-node-single-writer": csipb.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER,
	"multi-node-multi-writer":  csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER,
}

// OneWriter reports whether an access mode allows a single writer, so that
// two write claims (or two versions of a writing job) cannot hold the
// volume at once.
func OneWriter(accessMode string) bool {
	return accessMode == "single-node-writer" || accessMode == "multi-node-single-writer"
}

// AttachmentBlockDevice is the attachment mode of raw block volumes; every
// other volume is mounted as a file system.
const AttachmentBlockDevice = "block-device"

// VolumeCapabilityPB turns one of a volume's capabilities into the spec's
// form, with the volume's mount options for file-system attachments.
func VolumeCapabilityPB(c *VolumeCapability, mo *MountOptions) *csipb.VolumeCapability {
	out := &csipb.VolumeCapability{
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: accessModes[c.AccessMode]},
	}
	if c.AttachmentMode == AttachmentBlockDevice {
		out.AccessType = &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}}
		return out
	}
	m := &csipb.VolumeCapability_MountVolume{}
	if mo != nil {
		m.FsType, m.MountFlags = mo.FSType, append([]string(nil), mo.MountFlags...)
	}
	out.AccessType = &csipb.VolumeCapability_Mount{Mount: m}
	return out
}

func capabilities(v *Volume) []*csipb.VolumeCapability {
	out := make([]*csipb.VolumeCapability, len(v.RequestedCapabilities))
	for i, c := range v.RequestedCapabilities {
		out[i] = VolumeCapabilityPB(c, v.MountOptions)
	}
	return out
}

func firstCapability(v *Volume) *csipb.VolumeCapability {
	if len(v.RequestedCapabilities) == 0 {
		return nil
	}
	return VolumeCapabilityPB(v.RequestedCapabilities[0], v.MountOptions)
}

// createRequest is CreateVolume's request for v; its name is the
// idempotency key, so a retry after a crash finds what the first made.
func createRequest(v *Volume) *csipb.CreateVolumeRequest {
	req := &csipb.CreateVolumeRequest{
		Name:               v.Name,
		VolumeCapabilities: capabilities(v),
		Parameters:         v.Parameters,
		Secrets:            v.Secrets,
	}
	if v.RequestedCapacityMin > 0 || v.RequestedCapacityMax > 0 {
		req.CapacityRange = &csipb.CapacityRange{RequiredBytes: v.RequestedCapacityMin, LimitBytes: v.RequestedCapacityMax}
	}
	switch {
	case v.SnapshotID != "":
		req.VolumeContentSource = &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Snapshot{
			Snapshot: &csipb.VolumeContentSource_SnapshotSource{SnapshotId: v.SnapshotID}}}
	case v.CloneID != "":
		req.VolumeContentSource = &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Volume{
			Volume: &csipb.VolumeContentSource_VolumeSource{VolumeId: v.CloneID}}}
	}
	if t := v.RequestedTopologies; t != nil && (len(t.Required) > 0 || len(t.Preferred) > 0) {
		req.AccessibilityRequirements = &csipb.TopologyRequirement{
			Requisite: toTopologies(t.Required), Preferred: toTopologies(t.Preferred),
		}
	}
	return req
}

func toTopologies(ts []*Topology) []*csipb.Topology {
	out := make([]*csipb.Topology, len(ts))
	for i, t := range ts {
		out[i] = &csipb.Topology{Segments: cloneMap(t.Segments)}
	}
	return out
}

func fromTopologies(ts []*csipb.Topology) []*Topology {
	if len(ts) == 0 {
		return nil
	}
	out := make([]*Topology, len(ts))
	for i, t := range ts {
		out[i] = &Topology{Segments: cloneMap(t.GetSegments())}
	}
	return out
}
