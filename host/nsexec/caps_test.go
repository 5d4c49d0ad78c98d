package nsexec

import (
	"testing"

	"github.com/pluginhost/pluginhost/host/jobspec"
)

// The job file's capability names (jobspec, which a job is validated
// against) and the helper's numbers are two lists of one kernel header:
// every name a job may use has the number capability.h gives it.
func TestCapabilityNamesMatchJobspec(t *testing.T) {
	if len(jobspec.LinuxCapabilities) != len(capNames) {
		t.Errorf("jobspec knows %d capabilities, nsexec %d", len(jobspec.LinuxCapabilities), len(capNames))
	}
	for i, name := range jobspec.LinuxCapabilities {
		if n, ok := CapabilityNumber(name); !ok || n != i {
			t.Errorf("%s: nsexec number %d (known %t), jobspec position %d", name, n, ok, i)
		}
	}
}
