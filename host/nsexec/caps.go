package nsexec

import (
	"fmt"
	"slices"
	"strings"
)

// capNames are Linux's capabilities by number (linux/capability.h).
var capNames = [...]string{
	"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
	"SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW",
	"IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT",
	"SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD",
	"LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG",
	"WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE",
}

// DefaultCaps is the exec driver's default capability set, Nomad's
// (drivers/shared/capabilities/defaults.go: Docker's defaults without
// NET_RAW). It includes DAC_OVERRIDE: an exec task running as nobody may
// write into a root-owned CSI volume, on Nomad and here.
var DefaultCaps = []string{
	"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
	"NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}

// CapabilityNumber returns the number of a capability named as Nomad
// accepts it: "net_raw", "NET_RAW" or "CAP_NET_RAW".
func CapabilityNumber(name string) (int, bool) {
	n := strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(name)), "CAP_")
	i := slices.Index(capNames[:], n)
	return i, i >= 0
}

// TaskCaps is the capability set of an exec task: the defaults, less
// cap_drop ("all" drops every one), plus cap_add. As on Nomad, the result
// must stay within the allowed set (the defaults: Nomad's allow_caps).
func TaskCaps(add, drop []string) ([]int, error) {
	set := map[int]bool{}
	for _, n := range DefaultCaps {
		c, _ := CapabilityNumber(n)
		set[c] = true
	}
	for _, n := range drop {
		if strings.EqualFold(n, "all") {
			clear(set)
			continue
		}
		c, ok := CapabilityNumber(n)
		if !ok {
			return nil, fmt.Errorf("cap_drop: unknown capability %q", n)
		}
		delete(set, c)
	}
	for _, n := range add {
		if strings.EqualFold(n, "all") {
			return nil, fmt.Errorf("cap_add: \"all\" is not within the allowed capabilities (%s)", strings.ToLower(strings.Join(DefaultCaps, ", ")))
		}
		c, ok := CapabilityNumber(n)
		if !ok {
			return nil, fmt.Errorf("cap_add: unknown capability %q", n)
		}
		if !slices.Contains(DefaultCaps, capNames[c]) {
			return nil, fmt.Errorf("cap_add: %q is not within the allowed capabilities (%s)", n, strings.ToLower(strings.Join(DefaultCaps, ", ")))
		}
		set[c] = true
	}
	out := make([]int, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	slices.Sort(out)
	return out, nil
}
