package jobspec

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// A go_plugin task that is not an sdk CSI plugin says what it is inside its
// driver `config` block, which Nomad leaves to the driver, so the file stays
// valid Nomad:
//
//	config {
//	  command = "plugin-go-grpc"
//	  handshake {                      # optional: default is the sdk's
//	    magic_cookie_key   = "BASIC_PLUGIN"
//	    magic_cookie_value = "hello"
//	    protocol_versions  = [1]       # optional: default [1]
//	  }
//	  plugin {                         # what pluginhost registers it as
//	    type           = "kv"
//	    name           = "kv_grpc"
//	    health_timeout = "30s"         # optional
//	  }
//	}

// DefaultPluginHealthTimeout is a generic plugin's health_timeout, as a CSI
// plugin's.
const DefaultPluginHealthTimeout = DefaultCSIHealthTimeout

// maxProtocolVersion bounds handshake protocol versions: go-plugin parses
// them as ints, and nobody has more than a handful.
const maxProtocolVersion = 1 << 16

// pluginTypePattern keeps plugin types usable as registry keys and in the
// resolver's pluginhost:///TYPE/NAME target: lower case, no slash.
var pluginTypePattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)

// cookieKeyPattern is an environment variable name: the cookie is passed to
// the plugin as KEY=VALUE in its environment.
var cookieKeyPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// GoPluginHandshake is go-plugin's handshake of a plugin not built with the
// sdk: its magic cookie and the protocol versions the host may speak.
type GoPluginHandshake struct {
	MagicCookieKey   string
	MagicCookieValue string
	// ProtocolVersions the host offers; the plugin picks one it speaks.
	ProtocolVersions []int
}

// GoPluginProvides says under which type and name pluginhost registers a
// generic plugin, and how long it may take to become healthy.
type GoPluginProvides struct {
	Type          string
	Name          string
	HealthTimeout time.Duration
}

// GenericPlugin is the plugin a go_plugin task's config declares (a
// `plugin` block: a generic plugin, not an sdk CSI plugin), nil for every
// other task.
func (t *Task) GenericPlugin() *GoPluginProvides {
	if t == nil || t.Driver != DriverGoPlugin || t.Config == nil {
		return nil
	}
	return t.Config.Plugin
}

var handshakeSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "magic_cookie_key"}, {Name: "magic_cookie_value"}, {Name: "protocol_versions"}},
}

var providesSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "type"}, {Name: "name"}, {Name: "health_timeout"}},
}

func decodeHandshake(d *decoder, b *hcl.Block, f string) *GoPluginHandshake {
	d.At(f, b.DefRange)
	c := d.Content(b.Body, handshakeSchema)
	h := &GoPluginHandshake{ProtocolVersions: []int{1}}
	if attr := c.Attributes["magic_cookie_key"]; d.Required(f+".MagicCookieKey", attr, b.DefRange, "Missing magic_cookie_key",
		"handshake needs `magic_cookie_key`, the environment variable go-plugin's cookie is passed in.") {
		h.MagicCookieKey, _ = d.FieldString(f+".MagicCookieKey", attr, nil)
	}
	if attr := c.Attributes["magic_cookie_value"]; d.Required(f+".MagicCookieValue", attr, b.DefRange, "Missing magic_cookie_value",
		"handshake needs `magic_cookie_value`, the value the plugin expects in its cookie variable.") {
		h.MagicCookieValue, _ = d.FieldString(f+".MagicCookieValue", attr, nil)
	}
	if attr := c.Attributes["protocol_versions"]; attr != nil {
		d.Attr(f+".ProtocolVersions", attr, func() bool {
			var ok bool
			h.ProtocolVersions, ok = wholeList(d, attr)
			return ok
		})
	}
	return h
}

// wholeList reads a list of whole numbers.
func wholeList(d *decoder, attr *hcl.Attribute) ([]int, bool) {
	v, ok := d.Value(attr, nil, cty.List(cty.Number))
	if !ok {
		return nil, false
	}
	out := make([]int, 0, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		_, ev := it.Element()
		bf := ev.AsBigFloat()
		i, acc := bf.Int64()
		if !bf.IsInt() || acc != big.Exact || i < math.MinInt32 || i > math.MaxInt32 {
			d.Errorf(attr.Expr.Range(), "Invalid number", "%q must be a list of whole numbers, got %s.", attr.Name, bf.Text('g', 10))
			return nil, false
		}
		out = append(out, int(i))
	}
	return out, true
}

func decodeProvides(d *decoder, b *hcl.Block, f string) *GoPluginProvides {
	d.At(f, b.DefRange)
	c := d.Content(b.Body, providesSchema)
	p := &GoPluginProvides{HealthTimeout: DefaultPluginHealthTimeout}
	if attr := c.Attributes["type"]; d.Required(f+".Type", attr, b.DefRange, "Missing plugin type",
		"plugin needs `type`, the plugin type consumers ask for (pluginhost:///TYPE/NAME).") {
		p.Type, _ = d.FieldString(f+".Type", attr, nil)
	}
	if attr := c.Attributes["name"]; d.Required(f+".Name", attr, b.DefRange, "Missing plugin name",
		"plugin needs `name`, the name consumers ask for (pluginhost:///TYPE/NAME).") {
		p.Name, _ = d.FieldString(f+".Name", attr, nil)
	}
	if v, ok := d.FieldDuration(f+".HealthTimeout", c.Attributes["health_timeout"]); ok {
		p.HealthTimeout = v
	}
	return p
}

// goPluginConfig checks a task's handshake and plugin blocks: only
// go_plugin tasks have them, a handshake only names a plugin that is not
// the sdk's CSI one, and a task is a CSI plugin or a generic one, not both.
func (v *validation) goPluginConfig(f string, t *Task) {
	c := t.Config
	if c.Handshake == nil && c.Plugin == nil {
		return
	}
	if t.Driver != DriverGoPlugin {
		for _, k := range []struct{ field, key string }{{"Handshake", "handshake"}, {"Plugin", "plugin"}} {
			if (k.key == "handshake" && c.Handshake != nil) || (k.key == "plugin" && c.Plugin != nil) {
				v.Add(f+"."+k.field, "Unsupported block",
					"%s is only supported by the go_plugin driver; Nomad's raw_exec has no such block.", k.key)
			}
		}
		return
	}
	if c.Plugin == nil {
		v.Add(f+".Handshake", "Missing plugin block",
			"A handshake is for a plugin that is not an sdk CSI plugin; say what it provides with `plugin { type = \"...\" name = \"...\" }`.")
	} else {
		if t.CSIPluginConfig != nil {
			v.Add(f+".Plugin", "Conflicting plugin blocks",
				"Task %q has a csi_plugin block and a config plugin block; a CSI plugin uses csi_plugin only.", t.Name)
		}
		v.provides(f+".Plugin", c.Plugin)
	}
	if c.Handshake != nil {
		v.handshake(f+".Handshake", c.Handshake)
	}
}

func (v *validation) provides(f string, p *GoPluginProvides) {
	switch {
	case !pluginTypePattern.MatchString(p.Type):
		v.Add(f+".Type", "Invalid plugin type",
			"The plugin type must start with a lower-case letter and hold only a-z, 0-9, '_' and '-' (at most 63), got %q.", p.Type)
	case strings.HasPrefix(p.Type, "csi"):
		v.Add(f+".Type", "Invalid plugin type",
			"Plugin types starting with \"csi\" are the CSI plugins'; declare a CSI plugin with a csi_plugin block, got %q.", p.Type)
	}
	if !csiPluginIDPattern.MatchString(p.Name) {
		v.Add(f+".Name", "Invalid plugin name",
			"The plugin name must start with a letter or digit and hold only letters, digits, '.', '_' and '-' (at most 128), got %q.", p.Name)
	}
	if v.nonNegative(f+".HealthTimeout", "health_timeout", p.HealthTimeout) && p.HealthTimeout == 0 {
		v.Add(f+".HealthTimeout", "Invalid health_timeout", "health_timeout must be longer than zero.")
	}
}

func (v *validation) handshake(f string, h *GoPluginHandshake) {
	if !cookieKeyPattern.MatchString(h.MagicCookieKey) {
		v.Add(f+".MagicCookieKey", "Invalid magic_cookie_key",
			"magic_cookie_key must be an environment variable name (letters, digits, '_', not starting with a digit), got %q.", h.MagicCookieKey)
	}
	if h.MagicCookieValue == "" {
		v.Add(f+".MagicCookieValue", "Invalid magic_cookie_value", "magic_cookie_value must not be empty.")
	}
	if len(h.ProtocolVersions) == 0 {
		v.Add(f+".ProtocolVersions", "Invalid protocol_versions", "protocol_versions must name at least one version.")
		return
	}
	for _, n := range h.ProtocolVersions {
		if n < 1 || n > maxProtocolVersion {
			v.Add(f+".ProtocolVersions", "Invalid protocol_versions",
				"Every protocol version must be between 1 and %d, got %d.", maxProtocolVersion, n)
			return
		}
	}
	s := slices.Clone(h.ProtocolVersions)
	slices.Sort(s)
	if len(slices.Compact(s)) != len(h.ProtocolVersions) {
		v.Add(f+".ProtocolVersions", "Invalid protocol_versions", "protocol_versions lists a version twice: %v.", h.ProtocolVersions)
	}
}

// GoPluginNote says, for job validate, what pluginhost does with a task's
// go_plugin config beyond what Nomad would; "" for other tasks.
func GoPluginNote(t *Task) string {
	if t.Driver != DriverGoPlugin {
		return ""
	}
	p := t.GenericPlugin()
	if p == nil {
		// Nothing in the file says what the binary is, and a plugin of
		// another type passes every check here only to fail its launch.
		what := "an sdk CSI plugin (sdk.Config with CSI)"
		if t.CSIPluginConfig == nil {
			what += ", supervised as a task without registering a plugin, since it has no csi_plugin block"
		}
		return fmt.Sprintf("task %q: without a plugin block in its config, the go_plugin binary must be %s; a plugin of another type (sdk.Config with Types, or any go-plugin gRPC binary) needs plugin { type = \"...\" name = \"...\" } in its config, or its launch fails with \"unknown service csi.v1.Identity\"",
			t.Name, what)
	}
	hs := "the sdk's handshake"
	if h := t.Config.Handshake; h != nil {
		hs = fmt.Sprintf("handshake %s=%s, protocol versions %v", h.MagicCookieKey, h.MagicCookieValue, h.ProtocolVersions)
	}
	return fmt.Sprintf("task %q: pluginhost launches it through go-plugin (%s), checks its gRPC health service \"plugin\" and registers it as plugin %s/%s (pluginhost:///%s/%s); Nomad has no go_plugin driver, its config keys handshake and plugin are pluginhost's",
		t.Name, hs, p.Type, p.Name, p.Type, p.Name)
}
