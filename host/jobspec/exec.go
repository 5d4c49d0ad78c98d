package jobspec

import (
	"fmt"
	"slices"
	"strings"
)

// The exec driver's task options, as Nomad's exec driver defines them
// (drivers/exec/driver.go, taskConfigSpec and TaskConfig.validate): command,
// args, pid_mode, ipc_mode, cap_add, cap_drop and work_dir, which must be an
// absolute path inside the task's chroot. Nomad's raw_exec has none of the
// four namespace and capability keys, so they are refused there.

// Isolation modes of pid_mode and ipc_mode.
const (
	IsolationModePrivate = "private"
	IsolationModeHost    = "host"
)

// DefaultExecUser is the user an exec task runs as when the job names
// none and the agent has no dynamic ids: Nomad's exec driver sets
// cfg.User to "nobody" in StartTask.
const DefaultExecUser = "nobody"

// LinuxCapabilities are the capability names Linux defines (capability.h,
// CAP_CHOWN = 0 to CAP_CHECKPOINT_RESTORE = 40), in Nomad's normal form:
// lower case, no "cap_" prefix. Nomad checks cap_add and cap_drop against
// the kernel's supported set when the task starts; a job file is checked
// against this list, and the driver may still refuse a name the running
// kernel lacks.
var LinuxCapabilities = []string{
	"chown", "dac_override", "dac_read_search", "fowner", "fsetid", "kill", "setgid", "setuid",
	"setpcap", "linux_immutable", "net_bind_service", "net_broadcast", "net_admin", "net_raw",
	"ipc_lock", "ipc_owner", "sys_module", "sys_rawio", "sys_chroot", "sys_ptrace", "sys_pacct",
	"sys_admin", "sys_boot", "sys_nice", "sys_resource", "sys_time", "sys_tty_config", "mknod",
	"lease", "audit_write", "audit_control", "setfcap", "mac_override", "mac_admin", "syslog",
	"wake_alarm", "block_suspend", "audit_read", "perfmon", "bpf", "checkpoint_restore",
}

// NomadDefaultCapabilities is the set an exec task gets, and the default
// of the driver's allow_caps, in normal form: Docker's default set without
// NET_RAW (drivers/shared/capabilities/defaults.go, HCLSpecLiteral).
var NomadDefaultCapabilities = []string{
	"audit_write", "chown", "dac_override", "fowner", "fsetid", "kill", "mknod", "net_bind_service",
	"setfcap", "setgid", "setpcap", "setuid", "sys_chroot",
}

// capAll is Nomad's name for every capability.
const capAll = "all"

// NormalizeCapability is Nomad's normal form of a capability name
// (capabilities.normalize): spaces trimmed, lower case, "cap_" removed.
// "" stays "" (Nomad ignores it) and "all"/"ALL" becomes "all".
func NormalizeCapability(name string) string {
	return strings.TrimPrefix(strings.ToLower(strings.TrimSpace(name)), "cap_")
}

// capSet is a set of normalized names; "all" expands to every capability.
func capSet(names []string) map[string]bool {
	set := map[string]bool{}
	for _, n := range names {
		switch c := NormalizeCapability(n); c {
		case "":
		case capAll:
			for _, k := range LinuxCapabilities {
				set[k] = true
			}
		default:
			set[c] = true
		}
	}
	return set
}

// ExecCapabilities is the capability set of an exec task, computed as
// Nomad's capabilities.Calculate does: the Nomad defaults allowed by
// allow (nil means Nomad's default allow_caps, NomadDefaultCapabilities),
// minus cap_drop, plus cap_add (cap_add wins, so cap_drop = ["all"] with a
// short cap_add is the way to a small set). The result is sorted, in the
// "CAP_NET_RAW" form the kernel's names take. It fails like Nomad when
// cap_add asks for a capability allow does not contain.
func ExecCapabilities(c *TaskConfig, allow []string) ([]string, error) {
	if allow == nil {
		allow = NomadDefaultCapabilities
	}
	allowed := capSet(allow)
	adds := capSet(c.CapAdd)
	if missing := notIn(adds, allowed); len(missing) > 0 {
		return nil, fmt.Errorf("driver does not allow the following capabilities: %s", strings.Join(missing, ", "))
	}
	result := map[string]bool{}
	for c := range capSet(NomadDefaultCapabilities) {
		if allowed[c] {
			result[c] = true
		}
	}
	for _, d := range c.CapDrop {
		switch n := NormalizeCapability(d); n {
		case capAll:
			clear(result)
		default:
			delete(result, n)
		}
	}
	for a := range adds {
		result[a] = true
	}
	out := make([]string, 0, len(result))
	for c := range result {
		out = append(out, "CAP_"+strings.ToUpper(c))
	}
	slices.Sort(out)
	return out, nil
}

// notIn lists the members of a missing from b, sorted.
func notIn(a, b map[string]bool) []string {
	var out []string
	for c := range a {
		if !b[c] {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// unknownCapabilities lists the entries of names that are no capability,
// as written.
func unknownCapabilities(names []string) []string {
	var out []string
	for _, n := range names {
		c := NormalizeCapability(n)
		if c != "" && c != capAll && !slices.Contains(LinuxCapabilities, c) {
			out = append(out, n)
		}
	}
	return out
}

// execConfig checks the exec-only keys: refused on other drivers (Nomad's
// raw_exec refuses unknown config keys), and on exec held to Nomad's
// exec TaskConfig.validate.
func (v *validation) execConfig(f, driver string, c *TaskConfig) {
	if driver != DriverExec {
		for _, k := range []struct {
			field, key string
			set        bool
		}{
			{"PIDMode", "pid_mode", c.PIDMode != ""},
			{"IPCMode", "ipc_mode", c.IPCMode != ""},
			{"CapAdd", "cap_add", c.CapAdd != nil},
			{"CapDrop", "cap_drop", c.CapDrop != nil},
		} {
			if k.set {
				v.AddKey(f+"."+k.field, "Unsupported argument",
					"%s is only supported by the exec driver; Nomad's %s has no such key.", k.key, nomadDriverName(driver))
			}
		}
		return
	}
	modes := []string{IsolationModePrivate, IsolationModeHost}
	v.Enum(f+".PIDMode", "pid_mode", c.PIDMode, modes)
	v.Enum(f+".IPCMode", "ipc_mode", c.IPCMode, modes)
	for _, k := range []struct {
		field, key string
		names      []string
	}{{"CapAdd", "cap_add", c.CapAdd}, {"CapDrop", "cap_drop", c.CapDrop}} {
		if bad := unknownCapabilities(k.names); len(bad) > 0 {
			v.Add(f+"."+k.field, "Invalid capability",
				"%s names capabilities Linux does not have: %q. Write them as \"net_raw\" or \"CAP_NET_RAW\", or \"all\".", k.key, bad)
		}
	}
}

// nomadDriverName is the driver a task has on Nomad: go_plugin tasks move
// there as raw_exec.
func nomadDriverName(driver string) string {
	if driver == DriverGoPlugin {
		return DriverRawExec
	}
	return driver
}
