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

// CapabilityNumber returns the number of a capability named as Nomad
// accepts it: "net_raw", "NET_RAW" or "CAP_NET_RAW".
func CapabilityNumber(name string) (int, bool) {
	n := strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(name)), "CAP_")
	i := slices.Index(capNames[:], n)
	return i, i >= 0
}

// CapabilityNumbers converts names (see CapabilityNumber).
func CapabilityNumbers(names []string) ([]int, error) {
	out := make([]int, 0, len(names))
	for _, n := range names {
		c, ok := CapabilityNumber(n)
		if !ok {
			return nil, fmt.Errorf("unknown capability %q", n)
		}
		out = append(out, c)
	}
	return out, nil
}
