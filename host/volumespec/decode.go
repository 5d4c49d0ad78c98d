package volumespec

import (
	"errors"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// mapKeys are the string maps of a volume file, each written as a block or
// (native syntax only) as an attribute.
var mapKeys = []string{"secrets", "parameters", "context"}

var volumeSchema = hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "id"}, {Name: "name"}, {Name: "type"}, {Name: "plugin_id"}, {Name: "namespace"},
		{Name: "external_id"}, {Name: "snapshot_id"}, {Name: "clone_id"},
		{Name: "capacity_min"}, {Name: "capacity_max"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "capability"}, {Type: "mount_options"}, {Type: "topology_request"}},
}

var capabilitySchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "access_mode"}, {Name: "attachment_mode"}},
}

var mountOptionsSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "fs_type"}, {Name: "mount_flags"}},
}

var topologyRequestSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{{Type: "required"}, {Type: "preferred"}},
}

var topologyListSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{{Type: "topology"}},
}

// defaultNamespace is the only namespace pluginhost knows. Nomad's own
// examples write it, so it is accepted rather than refused as unknown.
const defaultNamespace = "default"

// decodeVolume decodes the file's top-level body without Validate's rules:
// the volume is only as good as its shape. root is where problems about the
// whole file (a missing key) are reported.
func decodeVolume(d *decoder, body hcl.Body, root hcl.Range) *Volume {
	v := &Volume{}
	d.At("", root)
	c := d.Content(body, withMapFields(volumeSchema, d.json, mapKeys...))
	attrs := c.Attributes

	if attr := attrs["id"]; d.Required("ID", attr, root, "Missing id",
		"A volume file needs `id`, the name jobs' volume blocks use as their source.") {
		v.ID, _ = d.FieldString("ID", attr, nil)
	}
	v.Name, _ = d.FieldString("Name", attrs["name"], nil)
	if attr := attrs["type"]; d.Required("Type", attr, root, "Missing type",
		"A volume file needs `type = \"csi\"`.") {
		v.Type, _ = d.FieldString("Type", attr, nil)
	}
	if attr := attrs["plugin_id"]; d.Required("PluginID", attr, root, "Missing plugin_id",
		"A volume file needs `plugin_id`, the ID of the CSI plugin that serves the volume.") {
		v.PluginID, _ = d.FieldString("PluginID", attr, nil)
	}
	if attr := attrs["namespace"]; attr != nil {
		if ns, ok := d.String(attr, nil); ok && ns != defaultNamespace {
			d.Errorf(attr.Expr.Range(), "Unsupported namespace",
				"pluginhost has no namespaces; leave `namespace` out or write %q, got %q.", defaultNamespace, ns)
		}
	}
	v.ExternalID, _ = d.FieldString("ExternalID", attrs["external_id"], nil)
	v.SnapshotID, _ = d.FieldString("SnapshotID", attrs["snapshot_id"], nil)
	v.CloneID, _ = d.FieldString("CloneID", attrs["clone_id"], nil)
	v.RequestedCapacityMin = d.capacity("RequestedCapacityMin", attrs["capacity_min"])
	v.RequestedCapacityMax = d.capacity("RequestedCapacityMax", attrs["capacity_max"])

	var capBlocks, mountBlocks, topoBlocks hcl.Blocks
	for _, b := range c.Blocks {
		switch b.Type {
		case "capability":
			capBlocks = append(capBlocks, b)
		case "mount_options":
			mountBlocks = append(mountBlocks, b)
		case "topology_request":
			topoBlocks = append(topoBlocks, b)
		}
	}
	if len(capBlocks) == 0 && writes(body, "capability") {
		// The capability was written but is malformed (a label, a
		// non-object in JSON) and already reported; "missing" would be
		// a follow-on error.
		d.Fail("RequestedCapabilities")
	}
	for _, b := range capBlocks {
		v.RequestedCapabilities = append(v.RequestedCapabilities,
			decodeCapability(d, b, fmt.Sprintf("RequestedCapabilities[%d]", len(v.RequestedCapabilities))))
	}
	if b := d.AtMostOne(mountBlocks); b != nil {
		d.At("MountOptions", b.DefRange)
		mc := d.Content(b.Body, mountOptionsSchema)
		mo := &MountOptions{}
		mo.FSType, _ = d.FieldString("MountOptions.FSType", mc.Attributes["fs_type"], nil)
		mo.MountFlags, _ = d.FieldStringList("MountOptions.MountFlags", mc.Attributes["mount_flags"], nil)
		v.MountOptions = mo
	}
	if b := d.AtMostOne(topoBlocks); b != nil {
		v.RequestedTopologies = decodeTopologyRequest(d, b)
	}
	v.Secrets = d.mapField("Secrets", "secrets", c)
	v.Parameters = d.mapField("Parameters", "parameters", c)
	v.Context = d.mapField("Context", "context", c)
	return v
}

// capacity reads a size such as "10GiB" into bytes; a bare number is bytes.
func (d *decoder) capacity(path string, attr *hcl.Attribute) int64 {
	var n int64
	d.Attr(path, attr, func() bool {
		s, ok := d.String(attr, nil)
		if !ok {
			return false
		}
		var err error
		if n, err = ParseBytes(s); err != nil {
			detail := fmt.Sprintf("%s must be a size such as \"10GiB\" or \"500M\": %v.", attr.Name, err)
			if errors.Is(err, ErrSizeNegative) {
				detail = fmt.Sprintf("%s must not be negative, got %q.", attr.Name, s)
			}
			d.Errorf(attr.Expr.Range(), "Invalid "+attr.Name, "%s", detail)
			return false
		}
		return true
	})
	return n
}

func decodeCapability(d *decoder, b *hcl.Block, f string) *Capability {
	d.At(f, b.DefRange)
	c := d.Content(b.Body, capabilitySchema)
	cp := &Capability{}
	if attr := c.Attributes["access_mode"]; d.Required(f+".AccessMode", attr, b.DefRange, "Missing access_mode",
		"A capability needs access_mode, one of %q.", accessModes) {
		cp.AccessMode, _ = d.FieldString(f+".AccessMode", attr, nil)
	}
	if attr := c.Attributes["attachment_mode"]; d.Required(f+".AttachmentMode", attr, b.DefRange, "Missing attachment_mode",
		"A capability needs attachment_mode, one of %q.", attachmentModes) {
		cp.AttachmentMode, _ = d.FieldString(f+".AttachmentMode", attr, nil)
	}
	return cp
}

// decodeTopologyRequest reads `required` and `preferred`. Each may be
// repeated and their topologies are concatenated, as Nomad does: its own
// JSON form writes one `required` object per topology.
func decodeTopologyRequest(d *decoder, b *hcl.Block) *TopologyRequest {
	d.At("RequestedTopologies", b.DefRange)
	c := d.Content(b.Body, topologyRequestSchema)
	tr := &TopologyRequest{}
	for _, lb := range c.Blocks {
		list, field := &tr.Required, "RequestedTopologies.Required"
		if lb.Type == "preferred" {
			list, field = &tr.Preferred, "RequestedTopologies.Preferred"
		}
		before := d.Count()
		lc := d.Content(lb.Body, topologyListSchema)
		if len(lc.Blocks) == 0 && d.Count() == before {
			d.Errorf(lb.DefRange, "Missing topology",
				"A %s block holds one or more `topology { segments { ... } }` blocks.", lb.Type)
		}
		for _, tb := range lc.Blocks {
			f := fmt.Sprintf("%s[%d]", field, len(*list))
			*list = append(*list, decodeTopology(d, tb, f))
		}
	}
	return tr
}

var topologySchema = hcl.BodySchema{}

func decodeTopology(d *decoder, b *hcl.Block, f string) *Topology {
	d.At(f, b.DefRange)
	c := d.Content(b.Body, withMapFields(topologySchema, d.json, "segments"))
	return &Topology{Segments: d.mapField(f+".Segments", "segments", c)}
}

// writes tells whether body mentions key in any shape: as a block or
// attribute in native syntax, as any property in JSON.
func writes(body hcl.Body, key string) bool {
	if nb, ok := body.(*hclsyntax.Body); ok {
		if _, ok := nb.Attributes[key]; ok {
			return true
		}
		for _, b := range nb.Blocks {
			if b.Type == key {
				return true
			}
		}
		return false
	}
	c, _, _ := body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: key}}})
	return c != nil && c.Attributes[key] != nil
}
