package jobspec

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict"
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

func decodeVolume(d *hclstrict.Decoder, b *hcl.Block) *VolumeRequest {
	v := &VolumeRequest{Name: b.Labels[0]}
	c := d.Content(b.Body, volumeSchema)

	// Nomad's default volume type is "host"; pluginhost only has CSI
	// volumes, so the type must be written to keep the meaning identical.
	if attr := c.Attributes["type"]; attr == nil {
		d.Errorf(b.DefRange, "Missing volume type", "Volume %q needs `type = \"csi\"`.", v.Name)
	} else if s, ok := d.String(attr, nil); ok {
		if s != VolumeTypeCSI {
			d.Errorf(attr.Expr.Range(), "Unsupported volume type", "pluginhost only supports CSI volumes (type = \"csi\"), got %q.", s)
		}
		v.Type = s
	}
	if attr := c.Attributes["source"]; attr == nil {
		d.Errorf(b.DefRange, "Missing volume source", "Volume %q needs `source`, the ID of the CSI volume.", v.Name)
	} else if s, ok := d.String(attr, nil); ok {
		if s == "" {
			d.Errorf(attr.Expr.Range(), "Invalid volume source", "The volume source must not be empty.")
		}
		v.Source = s
	}
	v.ReadOnly, _ = d.Bool(c.Attributes["read_only"])
	v.PerAlloc, _ = d.Bool(c.Attributes["per_alloc"])

	v.AccessMode = requiredEnum(d, b, c.Attributes["access_mode"], "access_mode",
		AccessModeSingleNodeReader, AccessModeSingleNodeWriter, AccessModeMultiNodeReader,
		AccessModeMultiNodeSingleWrite, AccessModeMultiNodeMultiWrite)
	v.AttachmentMode = requiredEnum(d, b, c.Attributes["attachment_mode"], "attachment_mode",
		AttachmentModeFilesystem, AttachmentModeBlockDevice)

	var mos hcl.Blocks
	for _, blk := range c.Blocks {
		mos = append(mos, blk)
	}
	if mb := d.AtMostOne(mos); mb != nil {
		mc := d.Content(mb.Body, mountOptionsSchema)
		mo := &CSIMountOptions{}
		mo.FSType, _ = d.String(mc.Attributes["fs_type"], nil)
		mo.MountFlags, _ = d.StringList(mc.Attributes["mount_flags"], nil)
		v.MountOptions = mo
		if v.AttachmentMode == AttachmentModeBlockDevice {
			d.Errorf(mb.DefRange, "Invalid mount_options", "A block-device attachment is not mounted, so it takes no mount_options.")
		}
	}
	return v
}

// requiredEnum reads a string key that must be present and one of allowed.
func requiredEnum(d *hclstrict.Decoder, b *hcl.Block, attr *hcl.Attribute, key string, allowed ...string) string {
	if attr == nil {
		d.Errorf(b.DefRange, "Missing "+key, "CSI volumes need %s, one of %q.", key, allowed)
		return ""
	}
	s, ok := d.String(attr, nil)
	if !ok {
		return ""
	}
	for _, a := range allowed {
		if s == a {
			return s
		}
	}
	d.Errorf(attr.Expr.Range(), "Invalid "+key, "%s must be one of %q, got %q.", key, allowed, s)
	return s
}
