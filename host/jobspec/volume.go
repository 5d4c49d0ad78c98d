package jobspec

import (
	"regexp"

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
	d.At(f, b.DefRange)
	d.At(f+".Name", labelRange(b))
	c := d.Content(b.Body, volumeSchema)

	// Nomad's default volume type is "host"; pluginhost only has CSI
	// volumes, so the type must be written to keep the meaning identical.
	if attr := c.Attributes["type"]; d.Required(f+".Type", attr, b.DefRange, "Missing volume type",
		"Volume %q needs `type = \"csi\"`.", v.Name) {
		v.Type, _ = d.FieldString(f+".Type", attr, nil)
	}
	if attr := c.Attributes["source"]; d.Required(f+".Source", attr, b.DefRange, "Missing volume source",
		"Volume %q needs `source`, the ID of the CSI volume.", v.Name) {
		v.Source, _ = d.FieldString(f+".Source", attr, nil)
	}
	v.ReadOnly, _ = d.FieldBool(f+".ReadOnly", c.Attributes["read_only"])
	v.PerAlloc, _ = d.FieldBool(f+".PerAlloc", c.Attributes["per_alloc"])

	v.AccessMode = requiredEnum(d, b, c.Attributes["access_mode"], f+".AccessMode", "access_mode", accessModes...)
	v.AttachmentMode = requiredEnum(d, b, c.Attributes["attachment_mode"], f+".AttachmentMode", "attachment_mode", attachmentModes...)

	if mb := d.AtMostOne(c.Blocks); mb != nil {
		d.At(f+".MountOptions", mb.DefRange)
		mc := d.Content(mb.Body, mountOptionsSchema)
		mo := &CSIMountOptions{}
		mo.FSType, _ = d.FieldString(f+".MountOptions.FSType", mc.Attributes["fs_type"], nil)
		mo.MountFlags, _ = d.FieldStringList(f+".MountOptions.MountFlags", mc.Attributes["mount_flags"], nil)
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
	if !d.Required(f, attr, b.DefRange, "Missing "+key, "CSI volumes need %s, one of %q.", key, allowed) {
		return ""
	}
	s, _ := d.FieldString(f, attr, nil)
	return s
}

// maxVolumeIDLen bounds volume IDs: they are state keys and path elements.
const maxVolumeIDLen = 128

// volumeIDPattern is the volume ID alphabet: the job ID one, plus '[' and
// ']' for per_alloc volumes ("data[0]"). None of it is special in a path.
var volumeIDPattern = regexp.MustCompile(`^[A-Za-z0-9._\[\]-]+$`)

// ValidVolumeID reports whether id can name a volume: a job's source and
// a volume file's id share this rule.
func ValidVolumeID(id string) bool {
	return id != "" && id != "." && id != ".." && len(id) <= maxVolumeIDLen && volumeIDPattern.MatchString(id)
}
