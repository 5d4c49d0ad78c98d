package jobspec

import (
	"path"
	"regexp"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict"
)

// csi_plugin defaults, as in Nomad.
const (
	DefaultCSIMountDir      = "/csi"
	DefaultCSIHealthTimeout = 30 * time.Second
)

// csiPluginIDPattern keeps plugin IDs usable as path elements and registry
// keys. It is the CSI driver-name alphabet, which every ID a real plugin
// reports already fits.
var csiPluginIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

var csiPluginSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "id"}, {Name: "type"}, {Name: "mount_dir"}, {Name: "stage_publish_base_dir"}, {Name: "health_timeout"},
	},
}

func decodeCSIPlugin(d *hclstrict.Decoder, b *hcl.Block) *TaskCSIPluginConfig {
	c := d.Content(b.Body, csiPluginSchema)
	p := &TaskCSIPluginConfig{MountDir: DefaultCSIMountDir, HealthTimeout: DefaultCSIHealthTimeout}

	if attr := c.Attributes["id"]; attr == nil {
		d.Errorf(b.DefRange, "Missing plugin id", "csi_plugin needs `id`, the name volumes refer to the plugin by.")
	} else if s, ok := d.String(attr, nil); ok {
		if !csiPluginIDPattern.MatchString(s) {
			d.Errorf(attr.Expr.Range(), "Invalid plugin id",
				"The plugin id must start with a letter or digit and hold only letters, digits, '.', '_' and '-' (at most 128), got %q.", s)
		}
		p.ID = s
	}
	if attr := c.Attributes["type"]; attr == nil {
		d.Errorf(b.DefRange, "Missing plugin type", "csi_plugin needs `type`: \"monolith\", \"node\" or \"controller\".")
	} else if s, ok := d.String(attr, nil); ok {
		switch s {
		case CSIPluginTypeMonolith, CSIPluginTypeNode, CSIPluginTypeController:
		default:
			d.Errorf(attr.Expr.Range(), "Invalid plugin type", "The plugin type must be \"monolith\", \"node\" or \"controller\", got %q.", s)
		}
		p.Type = s
	}
	if attr := c.Attributes["mount_dir"]; attr != nil {
		if s, ok := d.String(attr, nil); ok {
			checkAbsDir(d, attr, s)
			p.MountDir = s
		}
	}
	p.StagePublishBaseDir = p.MountDir
	if attr := c.Attributes["stage_publish_base_dir"]; attr != nil {
		if s, ok := d.String(attr, nil); ok {
			checkAbsDir(d, attr, s)
			p.StagePublishBaseDir = s
		}
	}
	if attr := c.Attributes["health_timeout"]; attr != nil {
		if v, ok := d.Duration(attr); ok {
			if v == 0 {
				d.Errorf(attr.Expr.Range(), "Invalid health_timeout", "health_timeout must be longer than zero.")
			}
			p.HealthTimeout = v
		}
	}
	return p
}

func checkAbsDir(d *hclstrict.Decoder, attr *hcl.Attribute, s string) {
	if !path.IsAbs(s) {
		d.Errorf(attr.Expr.Range(), "Invalid "+attr.Name, "%s must be an absolute path, got %q.", attr.Name, s)
	}
}
