package jobspec

import (
	"github.com/hashicorp/hcl/v2"
)

// CSI access and attachment modes, spelled as in Nomad's volume blocks.
const (
	AccessModeSingleNodeReader     = "single-node-reader-only"
	AccessModeSingleNodeWriter     = "single-node-writer"
	AccessModeMultiNodeReader      = "multi-node-reader-only"
	AccessModeMultiNodeSingleWrite = "multi-node-single-writer"
	AccessModeMultiNodeMultiWrite  = "multi-node-multi-writer"

	AttachmentModeFilesystem  = "file-system"
	AttachmentModeBlockDevice = "block-device"

	VolumeTypeCSI = "csi"
)

var volumeSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "type"}, {Name: "source"}, {Name: "read_only"}, {Name: "access_mode"},
		{Name: "attachment_mode"}, {Name: "per_alloc"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "mount_options"}},
}

var mountOptionsSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "fs_type"}, {Name: "mount_flags"}},
}

// decodeVolume decodes the volume block whose request is the field f.
func decodeVolume(d *decoder, b *hcl.Block, f string) *VolumeRequest {
	v := &VolumeRequest{Name: b.Labels[0]}
	d.at(f, b.DefRange)
	d.at(f+".Name", labelRange(b))
	c := d.Content(b.Body, volumeSchema)

	// Nomad's default volume type is "host"; pluginhost only has CSI
	// volumes, so the type must be written to keep the meaning identical.
	if attr := c.Attributes["type"]; d.required(f+".Type", attr, b, "Missing volume type",
		"Volume %q needs `type = \"csi\"`.", v.Name) {
		v.Type, _ = d.str(f+".Type", attr, nil)
	}
	if attr := c.Attributes["source"]; d.required(f+".Source", attr, b, "Missing volume source",
		"Volume %q needs `source`, the ID of the CSI volume.", v.Name) {
		v.Source, _ = d.str(f+".Source", attr, nil)
	}
	v.ReadOnly, _ = d.boolean(f+".ReadOnly", c.Attributes["read_only"])
	v.PerAlloc, _ = d.boolean(f+".PerAlloc", c.Attributes["per_alloc"])

	v.AccessMode = requiredEnum(d, b, c.Attributes["access_mode"], f+".AccessMode", "access_mode", accessModes...)
	v.AttachmentMode = requiredEnum(d, b, c.Attributes["attachment_mode"], f+".AttachmentMode", "attachment_mode", attachmentModes...)

	if mb := d.AtMostOne(c.Blocks); mb != nil {
		d.at(f+".MountOptions", mb.DefRange)
		mc := d.Content(mb.Body, mountOptionsSchema)
		mo := &CSIMountOptions{}
		mo.FSType, _ = d.str(f+".MountOptions.FSType", mc.Attributes["fs_type"], nil)
		mo.MountFlags, _ = d.strList(f+".MountOptions.MountFlags", mc.Attributes["mount_flags"], nil)
		v.MountOptions = mo
	}
	return v
}

var (
	accessModes = []string{
		AccessModeSingleNodeReader, AccessModeSingleNodeWriter, AccessModeMultiNodeReader,
		AccessModeMultiNodeSingleWrite, AccessModeMultiNodeMultiWrite,
	}
	attachmentModes = []string{AttachmentModeFilesystem, AttachmentModeBlockDevice}
)

// requiredEnum reads a string key that must be present; Validate checks it
// is one of allowed, which only words the message for a missing key.
func requiredEnum(d *decoder, b *hcl.Block, attr *hcl.Attribute, f, key string, allowed ...string) string {
	if !d.required(f, attr, b, "Missing "+key, "CSI volumes need %s, one of %q.", key, allowed) {
		return ""
	}
	s, _ := d.str(f, attr, nil)
	return s
}
