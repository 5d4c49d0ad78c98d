package cgroup

import "testing"

// The clock is the first "cpu MHz" line (a VM without cpufreq has only
// that); a file without one gives 0, not an error.
func TestCPUInfoMHz(t *testing.T) {
	const cpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\ncpu MHz\t\t: 2100.000\n\nprocessor\t: 1\ncpu MHz\t\t: 1800.5\n"
	if got := cpuinfoMHz([]byte(cpuinfo)); got != 2100 {
		t.Errorf("cpuinfoMHz = %v, want 2100", got)
	}
	if got := cpuinfoMHz([]byte("processor\t: 0\nBogoMIPS\t: 48.00\n")); got != 0 {
		t.Errorf("cpuinfoMHz without a clock = %v, want 0", got)
	}
	if m := DetectMachine(); m.Cores < 1 || m.MHz < 0 {
		t.Errorf("DetectMachine = %+v", m)
	}
}
