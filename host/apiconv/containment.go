package apiconv

import (
	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/cgroup"
)

// Containment is /v1/agent/self's view of m.
func Containment(m *cgroup.Manager) *api.Containment {
	if m == nil {
		return &api.Containment{Reason: "cgroups are not in use"}
	}
	i := m.Info()
	return &api.Containment{CgroupVersion: i.Version, CgroupParent: i.Parent, Controllers: i.Controllers, Reason: i.Reason}
}
