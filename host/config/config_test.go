package config

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict"
)

const examplePath = "../../config.hcl.example"

func TestExampleConfigParses(t *testing.T) {
	c, err := ParseFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	repo, _ := filepath.Abs("../..")
	want := &Config{
		DataDir:        "/var/lib/pluginhost",
		LogLevel:       "info",
		NodeName:       "node-1",
		Datacenter:     "dc1",
		Jobs:           []string{filepath.Join(repo, "examples", "demo.hcl")},
		CSI:            CSIConfig{FingerprintInterval: 30 * time.Second, ProbeTimeout: 5 * time.Second, VolumeMountTimeout: 2 * time.Minute},
		Plugin:         PluginConfig{SocketDir: "/run/pluginhost"},
		GC:             GCConfig{Interval: time.Minute, MaxAllocs: 50, DiskUsageThreshold: 80, InodeUsageThreshold: 70},
		Containment:    withCgroupParent(defaultContainment(), "/pluginhost/node-1"),
		MaxKillTimeout: 30 * time.Second,
		SourcePath:     filepath.Join(repo, "config.hcl.example"),
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got  %+v\nwant %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

// TestExampleDocumentsEveryKey keeps config.hcl.example complete: every key
// of every schema is set in it, with a comment line right above.
func TestExampleDocumentsEveryKey(t *testing.T) {
	src, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	f, diags := hclparse.NewParser().ParseHCL(src, examplePath)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	lines := strings.Split(string(src), "\n")
	commented := func(line int) bool { // 1-based line of the key
		return line >= 2 && strings.HasPrefix(strings.TrimSpace(lines[line-2]), "#")
	}
	root, diags := f.Body.Content(rootSchema)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	for _, a := range rootSchema.Attributes {
		attr := root.Attributes[a.Name]
		if a.Name == "addr" {
			// Shown commented out: a copied addr would move the
			// agent off the default address the CLI looks at.
			if attr != nil {
				t.Error("addr is set in the example; show it commented out")
			} else if !regexp.MustCompile(`(?m)^#\s*addr\s*=`).Match(src) {
				t.Error("addr is not in the example, commented out")
			}
			continue
		}
		if attr == nil {
			t.Errorf("%s is not in the example", a.Name)
		} else if !commented(attr.Range.Start.Line) {
			t.Errorf("%s has no comment above it", a.Name)
		}
	}
	blockSchemas := map[string][]string{"csi": names(csiSchema.Attributes), "plugin": names(pluginSchema.Attributes),
		"acl": names(aclSchema.Attributes)}
	for _, b := range root.Blocks {
		attrs, diags := b.Body.JustAttributes()
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		for _, n := range blockSchemas[b.Type] {
			if b.Type == "acl" {
				// Secrets are shown commented out: a live value in
				// an example gets copied and becomes a token everyone
				// knows.
				if attrs[n] != nil {
					t.Errorf("acl.%s is set in the example; show it commented out", n)
				} else if !regexp.MustCompile(`(?m)^\s*#\s*` + n + `\s*=`).Match(src) {
					t.Errorf("acl.%s is not in the example, commented out", n)
				}
				continue
			}
			if attrs[n] == nil {
				t.Errorf("%s.%s is not in the example", b.Type, n)
			} else if !commented(attrs[n].Range.Start.Line) {
				t.Errorf("%s.%s has no comment above it", b.Type, n)
			}
		}
		delete(blockSchemas, b.Type)
	}
	for b := range blockSchemas {
		t.Errorf("block %s is not in the example", b)
	}
}

func TestRelativePathsResolveAgainstConfigDir(t *testing.T) {
	c, err := ParseFile(filepath.Join("testdata", "good", "relative.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := filepath.Abs(filepath.Join("testdata", "good"))
	if c.DataDir != filepath.Join(dir, "state") {
		t.Errorf("DataDir = %q", c.DataDir)
	}
	if !reflect.DeepEqual(c.Jobs, []string{filepath.Join(dir, "sleep.hcl")}) {
		t.Errorf("Jobs = %q", c.Jobs)
	}
	if c.LogLevel != "debug" || !c.LogJSON || c.NodeName != "n1" || c.Datacenter != "west" {
		t.Errorf("values not read: %+v", c)
	}
	network, addr, err := c.APIListenAddr()
	if err != nil || network != "tcp" || addr != "localhost:0" {
		t.Errorf("APIListenAddr = %q %q %v", network, addr, err)
	}
}

func TestDefaults(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.hcl")
	if err := os.WriteFile(path, []byte(`data_dir = "`+dir+`"`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if c.LogLevel != "info" || c.LogJSON || c.Datacenter != "dc1" || c.NodeName != host || c.DevMode || c.EnableDebug {
		t.Errorf("defaults: %+v", c)
	}
	if c.CSI.FingerprintInterval != 30*time.Second || c.CSI.ProbeTimeout != DefaultProbeTimeout {
		t.Errorf("csi defaults: %+v", c.CSI)
	}
	// No addr: the agent's default, host/api.DefaultAddr, which does not
	// depend on data_dir.
	network, addr, err := c.APIListenAddr()
	if err != nil || network != "" || addr != "" {
		t.Errorf("APIListenAddr = %q %q %v, want the default", network, addr, err)
	}
}

// TestSocketLimitIsReal binds real unix sockets to show that the limit the
// parser enforces is the kernel's: an addr socket of exactly
// MaxSocketPathLen bytes binds, one byte more is refused at parse time with
// a located error.
func TestSocketLimitIsReal(t *testing.T) {
	base := t.TempDir()
	sockOf := func(total int) string {
		// total is the socket path length; pad a directory to reach it.
		pad := total - len(base) - len("/") - len("/api.sock")
		return filepath.Join(base, strings.Repeat("d", pad), "api.sock")
	}
	ok := sockOf(MaxSocketPathLen)
	if err := os.MkdirAll(filepath.Dir(ok), 0o700); err != nil {
		t.Fatal(err)
	}
	c := Dev()
	c.DataDir = base
	c.Addr = "unix://" + ok
	network, addr, err := c.APIListenAddr()
	if err != nil {
		t.Fatalf("path of exactly %d bytes refused: %v", MaxSocketPathLen, err)
	}
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Fatalf("kernel refused a %d-byte socket path: %v", len(addr), err)
	}
	t.Cleanup(func() { l.Close() })

	tooLong := sockOf(MaxSocketPathLen + 1)
	if err := os.MkdirAll(filepath.Dir(tooLong), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := net.Listen("unix", tooLong); err == nil {
		t.Fatalf("kernel accepted a %d-byte socket path; the limit constant is wrong", MaxSocketPathLen+1)
	}
	cfg := filepath.Join(base, "agent.hcl")
	if err := os.WriteFile(cfg, []byte("data_dir = \""+base+"\"\naddr = \"unix://"+tooLong+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = ParseFile(cfg)
	var de *hclstrict.DiagnosticsError
	if !errors.As(err, &de) || de.Diags[0].Subject.Start.Line != 2 {
		t.Fatalf("want a located error for the long addr, got %v", err)
	}
	c.Addr = "unix://" + tooLong
	if _, _, err := c.APIListenAddr(); err == nil {
		t.Error("APIListenAddr accepted a socket path over the limit")
	}
}

func TestDevAndValidate(t *testing.T) {
	c := Dev()
	if !c.DevMode || c.DataDir != "" || c.SourcePath != "" {
		t.Errorf("Dev() = %+v", c)
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "data_dir is required") {
		t.Errorf("Validate without data dir: %v", err)
	}
	c.DataDir = t.TempDir()
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	c.LogLevel = "loud"
	c.Addr = "10.0.0.1:80"
	c.CSI.ProbeTimeout = 0
	err := c.Validate()
	for _, want := range []string{"log_level", "loopback", "probe_timeout"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %v does not mention %s", err, want)
		}
	}
}

func TestParseAddr(t *testing.T) {
	for _, tc := range []struct {
		in, network, address string
		ok                   bool
	}{
		{"unix:///run/ph.sock", "unix", "/run/ph.sock", true},
		{"unix:///run/../run/ph.sock", "unix", "/run/ph.sock", true},
		{"127.0.0.1:4646", "tcp", "127.0.0.1:4646", true},
		{"127.0.0.2:4646", "tcp", "127.0.0.2:4646", true},
		{"[::1]:4646", "tcp", "[::1]:4646", true},
		{"localhost:0", "tcp", "localhost:0", true},
		{"0.0.0.0:4646", "", "", false},
		{"[::]:4646", "", "", false},
		{"192.168.1.1:4646", "", "", false},
		{"example.com:4646", "", "", false},
		{":4646", "", "", false},
		{"127.0.0.1", "", "", false},
		{"127.0.0.1:http", "", "", false},
		{"127.0.0.1:-1", "", "", false},
		{"unix://run/ph.sock", "", "", false},
		{"unix:///" + strings.Repeat("s", MaxSocketPathLen), "", "", false},
		{"tcp://127.0.0.1:1", "", "", false},
		{"", "", "", false},
	} {
		n, a, err := parseAddr(tc.in)
		if (err == nil) != tc.ok || n != tc.network || a != tc.address {
			t.Errorf("parseAddr(%q) = %q %q %v; want %q %q ok=%v", tc.in, n, a, err, tc.network, tc.address, tc.ok)
		}
	}
}

func TestParseFileIOErrors(t *testing.T) {
	if _, err := ParseFile(filepath.Join(t.TempDir(), "nope.hcl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := ParseFile(t.TempDir()); err == nil {
		t.Error("directory accepted as config file")
	}
}

func names(attrs []hcl.AttributeSchema) []string {
	out := make([]string, len(attrs))
	for i, a := range attrs {
		out[i] = a.Name
	}
	return out
}

func TestACLBlock(t *testing.T) {
	const mgmt, read = "management-0123456789abcdef", "read-0123456789abcdef"
	c, err := Parse([]byte(`data_dir = "/d"
acl {
  management_token = "`+mgmt+`"
  read_token       = "`+read+`"
}
`), "acl.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if c.ACL.ManagementToken != mgmt || c.ACL.ReadToken != read {
		t.Errorf("ACL = %+v", c.ACL)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	// Left out, both are empty: the agent generates them.
	c, err = Parse([]byte(`data_dir = "/d"`), "none.hcl")
	if err != nil || c.ACL != (ACLConfig{}) {
		t.Errorf("no acl block: %+v, %v", c, err)
	}
	// Validate holds a Config built in code to the same rules.
	c.ACL = ACLConfig{ManagementToken: "short", ReadToken: "with a space in it"}
	err = c.Validate()
	for _, want := range []string{"acl.management_token must be 16", "acl.read_token may hold only printable ASCII"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want %q", err, want)
		}
	}
	c.ACL = ACLConfig{ManagementToken: mgmt, ReadToken: mgmt}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "must differ") {
		t.Errorf("Validate of equal tokens = %v", err)
	}
}

// TestContainmentKeys: chroot_env replaces Nomad's default whole, the
// denied ids take Nomad's range syntax, and cgroup_parent is one cgroup
// however its slashes are written.
func TestContainmentKeys(t *testing.T) {
	c, err := Parse([]byte(`data_dir = "/var/lib/pluginhost"
chroot_env = {
  "/usr/bin/env"      = "/usr/bin/env"
  "/opt/app/"         = "/app"
}
denied_host_uids = "0, 1000-1999"
denied_host_gids = "0"
cgroup_parent    = "pluginhost.slice/"
users {
  dynamic_user_min = 70000
  dynamic_user_max = 70999
}
exec {
  allow_pid_mode_host = true
  seccomp             = false
}
`), "c.hcl")
	if err != nil {
		t.Fatal(err)
	}
	want := ContainmentConfig{
		ChrootEnv:      map[string]string{"/usr/bin/env": "/usr/bin/env", "/opt/app": "/app"},
		DeniedHostUIDs: jobspec.IDRanges{{Lo: 0, Hi: 0}, {Lo: 1000, Hi: 1999}},
		DeniedHostGIDs: jobspec.IDRanges{{Lo: 0, Hi: 0}},
		CgroupParent:   "/pluginhost.slice",
		PidsLimit:      DefaultPidsLimit,
		DynamicUserMin: 70000, DynamicUserMax: 70999,
		Exec: ExecOptions{AllowPIDModeHost: true},
	}
	if !reflect.DeepEqual(c.Containment, want) {
		t.Fatalf("got  %+v\nwant %+v", c.Containment, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	p := c.HostPolicy()
	if !p.DeniedUIDs.Contains(1500) || p.DeniedUIDs.Contains(2000) || !p.DeniedGIDs.Contains(0) || p.LookupUser == nil || p.AgentUser == nil {
		t.Fatalf("host policy %+v", p)
	}

	// Left out: Nomad's defaults.
	c, err = Parse([]byte(`data_dir = "/var/lib/pluginhost"`), "c.hcl")
	if err != nil {
		t.Fatal(err)
	}
	def := c.Containment
	// cgroup_parent left out: a parent of this agent's own, named by its
	// data dir, never another agent's.
	if def.CgroupParent != "" || c.CgroupParent() != CgroupParentFor("/var/lib/pluginhost") ||
		!strings.HasPrefix(c.CgroupParent(), "/pluginhost/") || CgroupParentFor("/var/lib/other") == c.CgroupParent() ||
		len(def.DeniedHostUIDs)+len(def.DeniedHostGIDs) != 0 ||
		def.ChrootEnv["/run/systemd/resolve"] != "/run/systemd/resolve" || len(def.ChrootEnv) != 9 {
		t.Fatalf("defaults %+v", def)
	}
	// An empty map is no map, as in Nomad: the default stays.
	c, err = Parse([]byte("data_dir = \"/var/lib/pluginhost\"\nchroot_env = {}\n"), "c.hcl")
	if err != nil || len(c.Containment.ChrootEnv) != 9 {
		t.Fatalf("chroot_env = {}: %v, %v", c.Containment.ChrootEnv, err)
	}
	// A Config built in code is held to the same rules.
	bad := Dev()
	bad.DataDir = "/var/lib/pluginhost"
	bad.Containment.ChrootEnv = map[string]string{"/bin": "/secrets/bin"}
	bad.Containment.CgroupParent = "pluginhost"
	err = bad.Validate()
	if err == nil || !strings.Contains(err.Error(), `chroot_env "/bin" = "/secrets/bin"`) ||
		!strings.Contains(err.Error(), `cgroup_parent "pluginhost" must be written "/pluginhost"`) {
		t.Fatalf("Validate = %v", err)
	}
}

func withCgroupParent(c ContainmentConfig, p string) ContainmentConfig {
	c.CgroupParent = p
	return c
}
