package jobspec

import (
	"regexp"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// csi_plugin defaults, as in Nomad.
const (
	DefaultCSIMountDir      = "/csi"
	DefaultCSIHealthTimeout = 30 * time.Second
	// DefaultCSIStagePublishBaseDir is Nomad's default
	// stage_publish_base_dir (api/tasks.go, TaskCSIPluginConfig.Canonicalize):
	// the plugin's local dir, outside mount_dir as Nomad requires.
	DefaultCSIStagePublishBaseDir = "/local/csi"
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

// decodeCSIPlugin decodes the csi_plugin block whose config is the field f.
func decodeCSIPlugin(d *decoder, b *hcl.Block, f string) *TaskCSIPluginConfig {
	d.At(f, b.DefRange)
	c := d.Content(b.Body, csiPluginSchema)
	p := &TaskCSIPluginConfig{MountDir: DefaultCSIMountDir, HealthTimeout: DefaultCSIHealthTimeout}

	if attr := c.Attributes["id"]; d.Required(f+".ID", attr, b.DefRange, "Missing plugin id",
		"csi_plugin needs `id`, the name volumes refer to the plugin by.") {
		p.ID, _ = d.FieldString(f+".ID", attr, nil)
	}
	if attr := c.Attributes["type"]; d.Required(f+".Type", attr, b.DefRange, "Missing plugin type",
		"csi_plugin needs `type`: \"monolith\", \"node\" or \"controller\".") {
		p.Type, _ = d.FieldString(f+".Type", attr, nil)
	}
	if s, ok := d.FieldString(f+".MountDir", c.Attributes["mount_dir"], nil); ok {
		p.MountDir = s
	}
	p.StagePublishBaseDir = DefaultCSIStagePublishBaseDir
	if s, ok := d.FieldString(f+".StagePublishBaseDir", c.Attributes["stage_publish_base_dir"], nil); ok {
		p.StagePublishBaseDir = s
	}
	if v, ok := d.FieldDuration(f+".HealthTimeout", c.Attributes["health_timeout"]); ok {
		p.HealthTimeout = v
	}
	return p
}
