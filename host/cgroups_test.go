package host

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/host/apiconv"
	"github.com/pluginhost/pluginhost/host/cgroup"
)

// Where cgroups cannot be used, every job run says that resources are not
// enforced and why, and /v1/agent/self says so too.
func TestContainmentWarningsWhenDisabled(t *testing.T) {
	m := cgroup.Detect(hclog.NewNullLogger(), cgroup.Options{Mode: "v1", V1Roots: map[string]string{"cpu": t.TempDir()}})
	if m.Enabled() {
		t.Fatal("a v1 setup without a memory hierarchy was enabled")
	}
	w := m.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], "not enforced") || !strings.Contains(w[0], m.Reason()) {
		t.Fatalf("warnings %q, want one naming the reason %q", w, m.Reason())
	}
	if info := apiconv.Containment(m); info.CgroupVersion != 0 || info.Reason == "" {
		t.Fatalf("agent self containment %+v", info)
	}
	if w := (*cgroup.Manager)(nil).Warnings(); w != nil {
		t.Fatalf("no manager: %q", w)
	}
}
