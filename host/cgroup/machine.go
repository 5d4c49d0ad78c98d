package cgroup

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Machine is this machine's CPU as Nomad's cpu fingerprint reads it,
// which turns CPU percentages into Nomad's MHz (TotalTicks).
type Machine struct {
	// MHz is one core's clock: the highest the kernel's cpufreq reports
	// (cpuinfo_max_freq, kHz), else the "cpu MHz" of /proc/cpuinfo
	// (virtual machines often have no cpufreq); 0 when neither says.
	MHz   float64
	Cores int
}

// DetectMachine reads the machine's CPU once.
func DetectMachine() Machine {
	m := Machine{Cores: runtime.NumCPU()}
	if b, err := os.ReadFile("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"); err == nil {
		if khz, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64); err == nil && khz > 0 {
			m.MHz = khz / 1000
			return m
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.MHz = cpuinfoMHz(b)
	}
	return m
}

// Ticks is a CPU percentage in MHz of this machine's cores, Nomad's
// TotalTicks.
func (m Machine) Ticks(percent float64) float64 {
	return TicksConsumed(percent, int(m.MHz)*m.Cores, m.Cores)
}

// cpuinfoMHz is the first "cpu MHz" of /proc/cpuinfo's text, 0 if none.
func cpuinfoMHz(b []byte) float64 {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(k) != "cpu MHz" {
			continue
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			return f
		}
	}
	return 0
}
