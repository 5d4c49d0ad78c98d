package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict"
)

// Containment options, named as Nomad's client names them. Nomad keeps
// chroot_env and cgroup_parent in its agent's `client` block and
// denied_host_uids/gids in each driver's `plugin "exec"` / `plugin
// "raw_exec"` config; pluginhost is one client with its drivers built in,
// so all four are top-level keys here (as gc_* are) and the denied ids
// apply to every driver. pids_limit, which Nomad lacks, sits with them.

// DefaultCgroupParent is the cgroup under which agents put their own
// parents by default (CgroupParentFor); the agent's tasks'
// cgroups (Nomad's is "nomad.slice" on cgroup v2 and "/nomad" on v1,
// client/lib/cgroupslib/switch_linux.go).
const DefaultCgroupParent = "/pluginhost"

// DefaultPidsLimit is pids_limit left out: Podman's default pids.max.
// Nomad and Docker set none, and one task holding 8,001 threads (seen in
// review) used a quarter of a 32,768 pid_max; 2048 leaves room for a
// busy JVM or Go server and stops a runaway one from starving the host.
const DefaultPidsLimit = 2048

// MaxPidsLimit is the kernel's PID_MAX_LIMIT, the largest pids.max it
// takes.
const MaxPidsLimit = 1 << 22

// DefaultChrootEnv returns Nomad's default chroot_env
// (client/config/config.go, DefaultChrootEnv): the host directories copied
// into every exec task's root, each at the same path. /run/systemd/resolve
// is there because /etc/resolv.conf is a symlink into it on systems with
// systemd-resolved; a source missing on the host is skipped.
func DefaultChrootEnv() map[string]string {
	m := map[string]string{}
	for _, p := range []string{
		"/bin", "/etc", "/lib", "/lib32", "/lib64", "/run/resolvconf", "/sbin", "/usr", "/run/systemd/resolve",
	} {
		m[p] = p
	}
	return m
}

// taskDirs are the directories the agent itself makes in a task's root
// (Nomad's task dir layout); chroot_env must not put anything there.
var taskDirs = []string{"/alloc", "/local", "/secrets"}

// ContainmentConfig holds the containment keys.
type ContainmentConfig struct {
	// ChrootEnv maps a host path to the path it takes in an exec task's
	// root: Nomad's chroot_env. Both sides are absolute and clean. A
	// non-empty chroot_env in the file replaces the default whole, as in
	// Nomad (client/allocrunner/taskrunner/task_dir_hook.go).
	ChrootEnv map[string]string
	// DeniedHostUIDs and DeniedHostGIDs are denied_host_uids and
	// denied_host_gids: no task of any driver may run as such a user or as
	// a member of such a group (see jobspec.CheckHost).
	DeniedHostUIDs jobspec.IDRanges
	DeniedHostGIDs jobspec.IDRanges
	// CgroupParent is cgroup_parent, the cgroup (a path under the cgroup
	// file system's root, with a leading "/") holding the tasks' cgroups;
	// "" (not set) is CgroupParentFor(data_dir), a parent of the agent's
	// own.
	CgroupParent string
	// PidsLimit is pids_limit: how many processes and threads each task's
	// cgroup may hold at once (pids.max); 0 means no limit.
	PidsLimit int
	// DynamicUserMin and DynamicUserMax are users { dynamic_user_min,
	// dynamic_user_max }: the ids the agent gives exec tasks that name no
	// user (a uid each, as Nomad's exec2 does) and every allocation (the
	// group of the directories its tasks share). -1 and -1 turn it off:
	// exec tasks then run as nobody, as under Nomad's exec driver.
	DynamicUserMin, DynamicUserMax int
	// Exec is the `exec` block: the exec driver's options.
	Exec ExecOptions
}

// ExecOptions is the `exec` block, the exec driver's options (Nomad's
// plugin "exec" { config { ... } }, with keys of pluginhost's own).
type ExecOptions struct {
	// AllowPIDModeHost and AllowIPCModeHost let a job ask for
	// pid_mode = "host" and ipc_mode = "host". Off by default: in the
	// host's pid namespace a task holding Nomad's default CAP_SETUID can
	// become the owner of any process it sees and reach the host's root
	// and cgroups through /proc/<pid>/root.
	AllowPIDModeHost, AllowIPCModeHost bool
	// Seccomp gives every exec task the default seccomp filter (package
	// host/seccomp). On by default; Nomad's exec driver has none.
	Seccomp bool
}

// Nomad's default dynamic workload user range
// (client/config/config.go: 80_000 to 89_999).
const (
	DefaultDynamicUserMin = 80000
	DefaultDynamicUserMax = 89999
)

// DynamicUsers reports whether the dynamic id range is on.
func (c *ContainmentConfig) DynamicUsers() bool { return c.DynamicUserMin >= 0 }

func defaultContainment() ContainmentConfig {
	return ContainmentConfig{
		ChrootEnv: DefaultChrootEnv(), PidsLimit: DefaultPidsLimit,
		DynamicUserMin: DefaultDynamicUserMin, DynamicUserMax: DefaultDynamicUserMax,
		Exec: ExecOptions{Seccomp: true},
	}
}

// HostPolicy is the part of jobspec.HostPolicy the configuration decides;
// the caller adds the user lookups.
func (c *Config) HostPolicy() jobspec.HostPolicy {
	return jobspec.HostPolicy{
		DeniedUIDs:   c.Containment.DeniedHostUIDs,
		DeniedGIDs:   c.Containment.DeniedHostGIDs,
		LookupUser:   jobspec.LookupOSUser,
		AgentUser:    jobspec.CurrentOSUser,
		DynamicUsers: c.Containment.DynamicUsers(),
		HostModes:    &jobspec.HostModes{PID: c.Containment.Exec.AllowPIDModeHost, IPC: c.Containment.Exec.AllowIPCModeHost},
	}
}

// decodeContainment reads the containment keys from the root attributes.
func decodeContainment(d *hclstrict.Decoder, a hcl.Attributes, c *ContainmentConfig) {
	if attr := a["chroot_env"]; attr != nil {
		if m, ok := decodeChrootEnv(d, attr); ok && len(m) > 0 {
			c.ChrootEnv = m
		}
	}
	for _, k := range []struct {
		key string
		dst *jobspec.IDRanges
	}{{"denied_host_uids", &c.DeniedHostUIDs}, {"denied_host_gids", &c.DeniedHostGIDs}} {
		attr := a[k.key]
		if attr == nil {
			continue
		}
		if s, ok := d.String(attr, nil); ok {
			r, err := jobspec.ParseIDRanges(s)
			if err != nil {
				d.Errorf(attr.Expr.Range(), "Invalid "+k.key,
					"%s: %v. Write ids and ranges separated by commas, as in Nomad: \"0,10-20\".", k.key, err)
				continue
			}
			*k.dst = r
		}
	}
	if attr := a["cgroup_parent"]; attr != nil {
		if s, ok := d.String(attr, nil); ok {
			p, err := cleanCgroupParent(s)
			if err != nil {
				d.Errorf(attr.Expr.Range(), "Invalid cgroup_parent", "cgroup_parent %s.", err)
			} else {
				c.CgroupParent = p
			}
		}
	}
	if attr := a["pids_limit"]; attr != nil {
		if n, ok := d.Whole(attr, 0, MaxPidsLimit); ok {
			if err := checkPidsLimit(n); err != nil {
				d.Errorf(attr.Expr.Range(), "Invalid pids_limit", "pids_limit %s.", err)
			} else {
				c.PidsLimit = n
			}
		}
	}
}

func checkPidsLimit(n int) error {
	switch {
	case n < 0:
		return fmt.Errorf("must be 0 (no limit) or a number of processes and threads, got %d", n)
	case n > MaxPidsLimit:
		return fmt.Errorf("may be at most %d (the kernel's PID_MAX_LIMIT), got %d", MaxPidsLimit, n)
	}
	return nil
}

// decodeChrootEnv reads `chroot_env = { "/host" = "/in/task" }`, reporting
// each bad entry at its key. Nomad's HCL1 config also takes a block
// `chroot_env { "/bin" = "/bin" }`, which HCL2 cannot parse (argument
// names cannot be quoted); the attribute form is valid in both.
func decodeChrootEnv(d *hclstrict.Decoder, attr *hcl.Attribute) (map[string]string, bool) {
	v, ok := d.Value(attr, nil, cty.Map(cty.String))
	if !ok {
		return nil, false
	}
	where := map[string]hcl.Range{}
	if pairs, diags := hcl.ExprMap(attr.Expr); !diags.HasErrors() {
		for _, kv := range pairs {
			if k, diags := kv.Key.Value(nil); !diags.HasErrors() && k.Type() == cty.String && k.IsKnown() && !k.IsNull() {
				where[k.AsString()] = kv.Key.Range()
			}
		}
	}
	out := map[string]string{}
	good := true
	entries := v.AsValueMap()
	for _, host := range slices.Sorted(maps.Keys(entries)) {
		task := entries[host].AsString()
		rng, ok := where[host]
		if !ok {
			rng = attr.Expr.Range()
		}
		if err := checkChrootEntry(host, task); err != nil {
			d.Errorf(rng, "Invalid chroot_env", "chroot_env %q = %q: %s.", host, task, err)
			good = false
			continue
		}
		out[path.Clean(host)] = path.Clean(task)
	}
	return out, good
}

func checkChrootEntry(host, task string) error {
	switch {
	case !path.IsAbs(host):
		return fmt.Errorf("the host path must be absolute")
	case !path.IsAbs(task):
		return fmt.Errorf("the path in the task's root must be absolute")
	case strings.ContainsRune(host+task, 0):
		return fmt.Errorf("paths must not contain NUL")
	case path.Clean(task) == "/":
		return fmt.Errorf("nothing can be copied over the task's root itself")
	}
	t := path.Clean(task)
	for _, dir := range taskDirs {
		if t == dir || strings.HasPrefix(t, dir+"/") {
			return fmt.Errorf("%s in the task's root is the agent's own (alloc, local and secrets are the task's directories)", dir)
		}
	}
	return nil
}

// CgroupParentFor is the cgroup_parent of an agent whose configuration
// sets none: a parent of its own under DefaultCgroupParent, named by a
// hash of its data dir (the same after every restart, as the socket root's
// fallback is). Two agents on one machine never share it, so neither ever
// finds the other's task groups among its own (a shared "/pluginhost"
// made each agent's start-up sweep kill the other's tasks).
func CgroupParentFor(dataDir string) string {
	sum := sha256.Sum256([]byte(dataDir))
	return DefaultCgroupParent + "/" + hex.EncodeToString(sum[:4])
}

// CgroupParent is the agent's cgroup_parent: the configured one, else
// CgroupParentFor its data dir.
func (c *Config) CgroupParent() string {
	if p := c.Containment.CgroupParent; p != "" {
		return p
	}
	return CgroupParentFor(c.DataDir)
}

// cleanCgroupParent accepts a cgroup path under the cgroup root, with or
// without its leading "/" ("nomad.slice" and "/nomad.slice" are one
// cgroup), and returns it with one.
func cleanCgroupParent(s string) (string, error) {
	t := strings.Trim(s, "/")
	switch {
	case t == "":
		return "", fmt.Errorf("must name a cgroup below the root, got %q", s)
	case strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return "", fmt.Errorf("must not contain spaces or control characters, got %q", s)
	}
	for _, el := range strings.Split(t, "/") {
		if el == "" || el == "." || el == ".." {
			return "", fmt.Errorf("must be a clean path without empty, \".\" or \"..\" elements, got %q", s)
		}
	}
	return "/" + t, nil
}

// maxDynamicID keeps the range clear of (uid_t)-1 and (uid_t)-2, which
// the kernel and chown give meanings of their own.
const maxDynamicID = 1<<32 - 3

// checkDynamicRange checks users { } against itself and the denied ids.
func checkDynamicRange(lo, hi int, deniedUIDs, deniedGIDs jobspec.IDRanges) error {
	switch {
	case lo == -1 && hi == -1:
		return nil
	case lo == -1 || hi == -1:
		return fmt.Errorf("dynamic_user_min and dynamic_user_max are -1 together (off) or neither, got %d and %d", lo, hi)
	case lo < 1 || hi > maxDynamicID || lo > hi:
		return fmt.Errorf("want 1 <= dynamic_user_min <= dynamic_user_max <= %d, got %d and %d", maxDynamicID, lo, hi)
	}
	for _, d := range []struct {
		name string
		r    jobspec.IDRanges
	}{{"denied_host_uids", deniedUIDs}, {"denied_host_gids", deniedGIDs}} {
		for _, x := range d.r {
			if int(x.Lo) <= hi && int(x.Hi) >= lo {
				return fmt.Errorf("the dynamic range %d-%d overlaps %s = %q: every exec task without a user would be refused", lo, hi, d.name, d.r.String())
			}
		}
	}
	return nil
}

// decodeUsers reads the users block (Nomad's client users block).
func decodeUsers(d *hclstrict.Decoder, b *hcl.Block, c *ContainmentConfig) {
	uc := d.Content(b.Body, usersSchema)
	min, max := c.DynamicUserMin, c.DynamicUserMax
	for _, k := range []struct {
		key string
		dst *int
	}{{"dynamic_user_min", &min}, {"dynamic_user_max", &max}} {
		if v, ok := d.Whole(uc.Attributes[k.key], -1, maxDynamicID); ok {
			*k.dst = v
		}
	}
	if err := checkDynamicRange(min, max, c.DeniedHostUIDs, c.DeniedHostGIDs); err != nil {
		d.Errorf(b.DefRange, "Invalid users block", "%s.", err)
		return
	}
	c.DynamicUserMin, c.DynamicUserMax = min, max
}

// decodeExec reads the exec block.
func decodeExec(d *hclstrict.Decoder, b *hcl.Block, c *ContainmentConfig) {
	ec := d.Content(b.Body, execSchema)
	for _, k := range []struct {
		key string
		dst *bool
	}{{"allow_pid_mode_host", &c.Exec.AllowPIDModeHost}, {"allow_ipc_mode_host", &c.Exec.AllowIPCModeHost}, {"seccomp", &c.Exec.Seccomp}} {
		if v, ok := d.Bool(ec.Attributes[k.key]); ok {
			*k.dst = v
		}
	}
}

var usersSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "dynamic_user_min"}, {Name: "dynamic_user_max"}},
}

var execSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "allow_pid_mode_host"}, {Name: "allow_ipc_mode_host"}, {Name: "seccomp"}},
}

// validateContainment is Config.Validate's part for a Config built in code.
func (c *ContainmentConfig) validate() []error {
	var errs []error
	if err := checkDynamicRange(c.DynamicUserMin, c.DynamicUserMax, c.DeniedHostUIDs, c.DeniedHostGIDs); err != nil {
		errs = append(errs, fmt.Errorf("users: %w", err))
	}
	for host, task := range c.ChrootEnv {
		if err := checkChrootEntry(host, task); err != nil {
			errs = append(errs, fmt.Errorf("chroot_env %q = %q: %w", host, task, err))
		}
	}
	if c.CgroupParent == "" {
		// Derived from the data dir (CgroupParentFor).
	} else if p, err := cleanCgroupParent(c.CgroupParent); err != nil {
		errs = append(errs, fmt.Errorf("cgroup_parent %w", err))
	} else if p != c.CgroupParent {
		errs = append(errs, fmt.Errorf("cgroup_parent %q must be written %q", c.CgroupParent, p))
	}
	if err := checkPidsLimit(c.PidsLimit); err != nil {
		errs = append(errs, fmt.Errorf("pids_limit %w", err))
	}
	return errs
}
