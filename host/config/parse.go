package config

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict"
)

// MaxFileSize bounds an agent config. The example config is 9 KB.
const MaxFileSize = 1 << 20

var rootSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "data_dir"}, {Name: "log_level"}, {Name: "log_json"}, {Name: "addr"}, {Name: "enable_debug"},
		{Name: "node_name"}, {Name: "datacenter"}, {Name: "jobs"},
		{Name: "gc_interval"}, {Name: "gc_max_allocs"}, {Name: "gc_disk_usage_threshold"}, {Name: "gc_inode_usage_threshold"},
		{Name: "chroot_env"}, {Name: "denied_host_uids"}, {Name: "denied_host_gids"}, {Name: "cgroup_parent"}, {Name: "pids_limit"},
		{Name: "max_kill_timeout"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "csi"}, {Type: "plugin"}, {Type: "acl"}, {Type: "users"}, {Type: "exec"}},
}

var csiSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "fingerprint_interval"}, {Name: "probe_timeout"}, {Name: "volume_mount_timeout"}},
}

var aclSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "management_token"}, {Name: "read_token"}},
}

var pluginSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "socket_dir"}},
}

// ParseFile reads and validates the agent config at path. Relative paths in
// it (data_dir, jobs) resolve against the file's directory, so a config
// means the same whatever the agent's working directory. Errors in the file
// are a *hclstrict.DiagnosticsError with every problem located.
func ParseFile(path string) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, fmt.Errorf("open config file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat config file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("config file %s: not a regular file", path)
	}
	// One byte more than the limit is enough for parse to refuse the file
	// where it crosses it.
	src, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read config file: %w", err)
	}
	c, err := parse(src, path, filepath.Dir(abs))
	if err != nil {
		return nil, err
	}
	c.SourcePath = abs
	return c, nil
}

// Parse parses a config held in memory; filename appears in diagnostics
// and its directory anchors relative paths.
func Parse(src []byte, filename string) (*Config, error) {
	dir, err := filepath.Abs(filepath.Dir(filename))
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", filename, err)
	}
	return parse(src, filename, dir)
}

func parse(src []byte, filename, baseDir string) (*Config, error) {
	// hcl's parser recurses without a bound of its own.
	if err := hclstrict.CheckSource(src, filename, hclstrict.SourceLimits{Kind: "agent config", MaxBytes: MaxFileSize}); err != nil {
		return nil, err
	}
	p := hclparse.NewParser()
	file, diags := p.ParseHCL(src, filename)
	d := &hclstrict.Decoder{}
	d.Add(diags)
	var c *Config
	if file != nil && !diags.HasErrors() {
		c = decode(d, file.Body, filename, baseDir)
	}
	if err := hclstrict.NewError(d.Diags(), p.Files()); err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("config file %s: nothing decoded", filename)
	}
	return c, nil
}

func decode(d *hclstrict.Decoder, body hcl.Body, filename, baseDir string) *Config {
	c := Dev()
	// Dev's own choices are not a config file's defaults.
	c.DevMode = false
	c.EnableDebug = false
	content := d.Content(body, rootSchema)
	a := content.Attributes

	if attr := a["data_dir"]; attr == nil {
		start := hcl.Pos{Line: 1, Column: 1}
		d.Errorf(hcl.Range{Filename: filename, Start: start, End: start}, "Missing data_dir",
			"The agent config needs `data_dir`, where the agent keeps its state. Use `pluginhost agent -dev` to run without one.")
	} else if s, ok := d.String(attr, nil); ok {
		if s == "" {
			d.Errorf(attr.Expr.Range(), "Invalid data_dir", "data_dir must not be empty.")
		} else {
			c.DataDir = resolve(baseDir, s)
		}
	}
	if attr := a["log_level"]; attr != nil {
		if s, ok := d.String(attr, nil); ok {
			s = strings.ToLower(s)
			if err := checkLogLevel(s); err != nil {
				d.Errorf(attr.Expr.Range(), "Invalid log_level", "log_level %s.", err)
			}
			c.LogLevel = s
		}
	}
	if v, ok := d.Bool(a["log_json"]); ok {
		c.LogJSON = v
	}
	if v, ok := d.Bool(a["enable_debug"]); ok {
		c.EnableDebug = v
	}
	if attr := a["addr"]; attr != nil {
		if s, ok := d.String(attr, nil); ok {
			if _, _, err := parseAddr(s); err != nil {
				d.Errorf(attr.Expr.Range(), "Invalid addr", "%s", err)
			}
			c.Addr = s
		}
	}
	if attr := a["node_name"]; attr != nil {
		if s, ok := d.String(attr, nil); ok {
			if s == "" {
				d.Errorf(attr.Expr.Range(), "Invalid node_name", "node_name must not be empty; leave it out to use the hostname.")
			}
			c.NodeName = s
		}
	}
	if attr := a["datacenter"]; attr != nil {
		if s, ok := d.String(attr, nil); ok {
			if s == "" {
				d.Errorf(attr.Expr.Range(), "Invalid datacenter", "datacenter must not be empty.")
			}
			c.Datacenter = s
		}
	}
	if attr := a["jobs"]; attr != nil {
		c.Jobs = decodeJobs(d, attr, baseDir)
	}

	if attr := a["gc_interval"]; attr != nil {
		if v, ok := d.Duration(attr); ok {
			if v < time.Second {
				d.Errorf(attr.Expr.Range(), "Invalid gc_interval", "gc_interval must be at least 1s, got %s.", v)
			}
			c.GC.Interval = v
		}
	}
	if attr := a["max_kill_timeout"]; attr != nil {
		if v, ok := d.Duration(attr); ok {
			if v < time.Second {
				d.Errorf(attr.Expr.Range(), "Invalid max_kill_timeout", "max_kill_timeout must be at least 1s, got %s.", v)
			}
			c.MaxKillTimeout = v
		}
	}
	if v, ok := d.Int(a["gc_max_allocs"], 1, 1<<20); ok {
		c.GC.MaxAllocs = v
	}
	if v, ok := d.Int(a["gc_disk_usage_threshold"], 1, 100); ok {
		c.GC.DiskUsageThreshold = float64(v)
	}
	if v, ok := d.Int(a["gc_inode_usage_threshold"], 1, 100); ok {
		c.GC.InodeUsageThreshold = float64(v)
	}

	decodeContainment(d, a, &c.Containment)

	var csis, plugins, acls, users, execs hcl.Blocks
	for _, b := range content.Blocks {
		switch b.Type {
		case "users":
			users = append(users, b)
		case "exec":
			execs = append(execs, b)
		case "csi":
			csis = append(csis, b)
		case "plugin":
			plugins = append(plugins, b)
		case "acl":
			acls = append(acls, b)
		}
	}
	if b := d.AtMostOne(csis); b != nil {
		cc := d.Content(b.Body, csiSchema)
		if attr := cc.Attributes["fingerprint_interval"]; attr != nil {
			if v, ok := d.Duration(attr); ok {
				if v < time.Second {
					d.Errorf(attr.Expr.Range(), "Invalid fingerprint_interval", "fingerprint_interval must be at least 1s, got %s.", v)
				}
				c.CSI.FingerprintInterval = v
			}
		}
		if attr := cc.Attributes["probe_timeout"]; attr != nil {
			if v, ok := d.Duration(attr); ok {
				if v == 0 {
					d.Errorf(attr.Expr.Range(), "Invalid probe_timeout", "probe_timeout must be longer than zero.")
				}
				c.CSI.ProbeTimeout = v
			}
		}
		if attr := cc.Attributes["volume_mount_timeout"]; attr != nil {
			if v, ok := d.Duration(attr); ok {
				if v < time.Second {
					d.Errorf(attr.Expr.Range(), "Invalid volume_mount_timeout", "volume_mount_timeout must be at least 1s, got %s.", v)
				}
				c.CSI.VolumeMountTimeout = v
			}
		}
	}
	if b := d.AtMostOne(plugins); b != nil {
		pc := d.Content(b.Body, pluginSchema)
		if attr := pc.Attributes["socket_dir"]; attr != nil {
			if s, ok := d.String(attr, nil); ok {
				if err := checkSocketDir(s); err != nil {
					d.Errorf(attr.Expr.Range(), "Invalid socket_dir", "socket_dir %s.", err)
				}
				c.Plugin.SocketDir = filepath.Clean(s)
			}
		}
	}
	if b := d.AtMostOne(acls); b != nil {
		decodeACL(d, b, c)
	}
	if b := d.AtMostOne(users); b != nil {
		decodeUsers(d, b, &c.Containment)
	}
	if b := d.AtMostOne(execs); b != nil {
		decodeExec(d, b, &c.Containment)
	}
	return c
}

// decodeACL reads the acl block's tokens. A diagnostic's detail never
// repeats a token; its source line is shown, as for every key, to whoever
// runs the agent with that file.
func decodeACL(d *hclstrict.Decoder, b *hcl.Block, c *Config) {
	ac := d.Content(b.Body, aclSchema)
	for _, k := range []struct {
		key string
		dst *string
	}{{"management_token", &c.ACL.ManagementToken}, {"read_token", &c.ACL.ReadToken}} {
		attr := ac.Attributes[k.key]
		if attr == nil {
			continue
		}
		s, ok := d.String(attr, nil)
		if !ok {
			continue
		}
		if err := checkToken(s); err != nil {
			d.Errorf(attr.Expr.Range(), "Invalid "+k.key, "%s %s; leave it out to have the agent generate one.", k.key, err)
		}
		*k.dst = s
	}
	if c.ACL.ManagementToken != "" && c.ACL.ManagementToken == c.ACL.ReadToken {
		d.Errorf(b.DefRange, "Invalid acl block", "management_token and read_token must differ: the read token may only GET.")
	}
}

// decodeJobs resolves job file paths and checks that each exists, reporting
// at the list element so a typo in the third of five paths is obvious.
func decodeJobs(d *hclstrict.Decoder, attr *hcl.Attribute, baseDir string) []string {
	paths, ok := d.StringList(attr, nil)
	if !ok {
		return nil
	}
	ranges := make([]hcl.Range, len(paths))
	for i := range ranges {
		ranges[i] = attr.Expr.Range()
	}
	if elems, diags := hcl.ExprList(attr.Expr); !diags.HasErrors() && len(elems) == len(paths) {
		for i, e := range elems {
			ranges[i] = e.Range()
		}
	}
	out := make([]string, 0, len(paths))
	seen := map[string]bool{}
	for i, p := range paths {
		if p == "" {
			d.Errorf(ranges[i], "Invalid job path", "Job file paths must not be empty.")
			continue
		}
		abs := resolve(baseDir, p)
		if seen[abs] {
			d.Errorf(ranges[i], "Duplicate job file", "%s is listed twice.", abs)
			continue
		}
		seen[abs] = true
		if st, err := os.Stat(abs); err != nil {
			d.Errorf(ranges[i], "Job file not found", "%s: %v.", abs, err)
		} else if !st.Mode().IsRegular() {
			d.Errorf(ranges[i], "Invalid job file", "%s is not a regular file.", abs)
		}
		out = append(out, abs)
	}
	return out
}

func resolve(baseDir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(baseDir, p)
}
