package volumespec

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict"
)

// Problem is one rule a volume specification breaks. Field is in Volume's
// Go field names, such as "RequestedCapabilities[0].AccessMode" or
// `Parameters[""]`; "" is the volume itself.
type Problem = hclstrict.Problem

// ValidationError lists every problem of a volume, in field order. It is a
// type of its own, not hclstrict's, so callers can tell a refused volume
// from a refused job with errors.As.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string { return hclstrict.ProblemsText(e.Problems, "volume") }

// Canonicalize fills in what a file may leave out and JSON leaves as a zero
// value: Name defaults to ID. The parser applies it; callers holding a
// Volume from elsewhere (an API body) apply it before Validate.
func Canonicalize(v *Volume) {
	if v != nil && v.Name == "" {
		v.Name = v.ID
	}
}

// Validate checks every rule that holds whatever the volume is used for:
// the rules a file is held to once its HCL or JSON has been decoded. It is
// the only home of these rules, so a Volume that arrives as an API body is
// refused exactly when the same file would be. v must be canonical (see
// Canonicalize). The error is a *ValidationError or nil.
func Validate(v *Volume) error {
	return problemsError(validate(v))
}

// ValidateFor is Validate plus the rules of one operation: register needs
// external_id and takes no snapshot_id or clone_id; create takes no
// external_id.
func ValidateFor(v *Volume, op Op) error {
	return problemsError(append(validate(v), validateOp(v, op)...))
}

func problemsError(ps []Problem) error {
	if len(ps) > 0 {
		return &ValidationError{Problems: ps}
	}
	return nil
}

// maxNameLen is the CSI spec's recommended bound on strings a CO sends.
const maxNameLen = 128

// validation holds the volume-specific checks; every check adds to the
// problems and carries on, so one call reports everything, as the parser
// does.
type validation struct {
	hclstrict.Problems
}

var (
	accessModes = []string{
		jobspec.AccessModeSingleNodeReader, jobspec.AccessModeSingleNodeWriter, jobspec.AccessModeMultiNodeReader,
		jobspec.AccessModeMultiNodeSingleWrite, jobspec.AccessModeMultiNodeMultiWrite,
	}
	attachmentModes = []string{jobspec.AttachmentModeFilesystem, jobspec.AttachmentModeBlockDevice}
)

func validate(v *Volume) []Problem {
	c := &validation{}
	if v == nil {
		c.Null("", "volume")
		return c.Problems
	}
	switch {
	case v.ID == "":
		c.Add("ID", "Invalid id", "The volume id must not be empty.")
	case !jobspec.ValidVolumeID(v.ID):
		c.Add("ID", "Invalid id",
			"The volume id must hold only letters, digits, '.', '_', '-', '[' and ']' (at most 128) and not be \".\" or \"..\", got %q.", v.ID)
	}
	// A name equal to the id is the id's default; the id's own problem
	// covers it.
	switch {
	case v.Name == v.ID:
	case v.Name == "":
		c.Add("Name", "Invalid name", "The volume name must not be empty; leave it out to use the id.")
	case len(v.Name) > maxNameLen || !utf8.ValidString(v.Name) || strings.IndexFunc(v.Name, unicode.IsControl) >= 0:
		c.Add("Name", "Invalid name", "The volume name must be valid UTF-8 without control characters, at most %d bytes, got %q.",
			maxNameLen, v.Name)
	}
	if v.Type != jobspec.VolumeTypeCSI {
		c.Add("Type", "Unsupported volume type", "pluginhost only supports CSI volumes (type = \"csi\"), got %q.", v.Type)
	}
	if !jobspec.ValidPluginID(v.PluginID) {
		c.Add("PluginID", "Invalid plugin_id",
			"The plugin_id must start with a letter or digit and hold only letters, digits, '.', '_' and '-' (at most 128), got %q.",
			v.PluginID)
	}
	if v.SnapshotID != "" && v.CloneID != "" {
		c.AddKey("CloneID", "Conflicting clone_id",
			"A new volume has one content source: give snapshot_id or clone_id, not both.")
	}
	c.capacity(v)
	c.capabilities(v)
	if v.RequestedTopologies != nil {
		c.topologies("RequestedTopologies.Required", v.RequestedTopologies.Required)
		c.topologies("RequestedTopologies.Preferred", v.RequestedTopologies.Preferred)
	}
	c.stringMap("Secrets", "secrets", v.Secrets)
	c.stringMap("Parameters", "parameters", v.Parameters)
	c.stringMap("Context", "context", v.Context)
	return c.Problems
}

func (c *validation) capacity(v *Volume) {
	ok := true
	if v.RequestedCapacityMin < 0 {
		c.Add("RequestedCapacityMin", "Invalid capacity_min", "capacity_min must not be negative, got %d.", v.RequestedCapacityMin)
		ok = false
	}
	if v.RequestedCapacityMax < 0 {
		c.Add("RequestedCapacityMax", "Invalid capacity_max", "capacity_max must not be negative, got %d.", v.RequestedCapacityMax)
		ok = false
	}
	if ok && v.RequestedCapacityMin > 0 && v.RequestedCapacityMax > 0 && v.RequestedCapacityMax < v.RequestedCapacityMin {
		c.Add("RequestedCapacityMax", "Invalid capacity range", "capacity_max (%s) must not be less than capacity_min (%s).",
			FormatBytes(v.RequestedCapacityMax), FormatBytes(v.RequestedCapacityMin))
	}
}

func (c *validation) capabilities(v *Volume) {
	if len(v.RequestedCapabilities) == 0 {
		c.Add("RequestedCapabilities", "Missing capability",
			"A volume needs at least one `capability { access_mode = ..., attachment_mode = ... }` block, one for each way jobs may use it.")
	}
	seen := map[Capability]int{}
	fileSystem, allKnown := false, true
	for i, cp := range v.RequestedCapabilities {
		f := fmt.Sprintf("RequestedCapabilities[%d]", i)
		if cp == nil {
			c.Null(f, "capability")
			continue
		}
		access := c.Enum(f+".AccessMode", "access_mode", cp.AccessMode, accessModes)
		attach := c.Enum(f+".AttachmentMode", "attachment_mode", cp.AttachmentMode, attachmentModes)
		allKnown = allKnown && attach
		fileSystem = fileSystem || cp.AttachmentMode == jobspec.AttachmentModeFilesystem
		if !access || !attach {
			continue
		}
		if first, dup := seen[*cp]; dup {
			c.Add(f, "Duplicate capability", "Capability %d already allows %s with %s.", first, cp.AccessMode, cp.AttachmentMode)
			continue
		}
		seen[*cp] = i
	}
	mo := v.MountOptions
	if mo == nil {
		return
	}
	// A block device is handed over unmounted, so mount options apply to
	// file-system capabilities only; with none of those they would be
	// silently ignored. With an unknown mode its own problem says enough.
	if !fileSystem && allKnown && len(v.RequestedCapabilities) > 0 {
		c.Add("MountOptions", "Invalid mount_options",
			"mount_options apply to file-system attachments, and no capability has attachment_mode = \"file-system\".")
	}
	for i, flag := range mo.MountFlags {
		if strings.TrimSpace(flag) == "" {
			c.Add(fmt.Sprintf("MountOptions.MountFlags[%d]", i), "Invalid mount_flags", "Mount flags must not be empty.")
		}
	}
}

func (c *validation) topologies(field string, ts []*Topology) {
	for i, t := range ts {
		f := fmt.Sprintf("%s[%d]", field, i)
		if t == nil {
			c.Null(f, "topology")
			continue
		}
		if len(t.Segments) == 0 {
			c.Add(f+".Segments", "Invalid topology", "A topology needs at least one segment, such as `segments { rack = \"R1\" }`.")
			continue
		}
		c.stringMap(f+".Segments", "segments", t.Segments)
	}
}

// stringMap refuses keys a file cannot write but JSON can: an empty key
// means nothing to a plugin.
func (c *validation) stringMap(field, key string, m map[string]string) {
	if _, bad := m[""]; bad {
		c.Add(field+`[""]`, "Invalid "+key+" key", "%s keys must not be empty.", key)
	}
}

// validateOp checks the keys that belong to one operation only.
func validateOp(v *Volume, op Op) []Problem {
	c := &validation{}
	if v == nil {
		return nil
	}
	switch op {
	case OpCreate:
		if v.ExternalID != "" {
			// Nomad ignores it on create; a user who wrote it most likely
			// meant to register an existing volume.
			c.AddKey("ExternalID", "Unexpected external_id",
				"external_id names an existing volume for `volume register`; `volume create` gets the ID from the plugin. Remove it, or register the volume instead.")
		}
	case OpRegister:
		if v.ExternalID == "" {
			c.Add("ExternalID", "Missing external_id",
				"`volume register` records an existing volume and needs its storage provider ID in external_id.")
		}
		if v.SnapshotID != "" {
			c.AddKey("SnapshotID", "Unexpected snapshot_id",
				"snapshot_id is a content source for `volume create`; an existing volume is registered as it is.")
		}
		if v.CloneID != "" {
			c.AddKey("CloneID", "Unexpected clone_id",
				"clone_id is a content source for `volume create`; an existing volume is registered as it is.")
		}
	default:
		c.Add("", "Invalid operation", "Unknown volume operation %d.", int(op))
	}
	return c.Problems
}
