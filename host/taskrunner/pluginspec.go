package taskrunner

import (
	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/host/jobspec"
)

// pluginSpec is the go_plugin launch spec of a task whose config declares
// a plugin that is not an sdk CSI plugin (a `plugin` block), nil for every
// other task. Start and Recover both take it from the job, so a re-adopted
// plugin is re-attached with the plugin set and identity check it was
// launched with.
func pluginSpec(t *jobspec.Task) *driver.PluginSpec {
	p := t.GenericPlugin()
	if p == nil {
		return nil
	}
	spec := &driver.PluginSpec{Dispense: p.Type}
	if h := t.Config.Handshake; h != nil {
		spec.MagicCookieKey, spec.MagicCookieValue = h.MagicCookieKey, h.MagicCookieValue
		spec.ProtocolVersions = append([]int(nil), h.ProtocolVersions...)
	}
	return spec
}
