package layering

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/pluginhost/pluginhost"

// rules: no package under from (the module path + from, or that package
// itself) may depend, directly or not, on a package under any of never.
var rules = []struct {
	from  string
	never []string
	why   string
}{
	{"sdk", []string{"host", "cmd", "csi/volumes", "csi/plugins"}, "plugin authors import the sdk; it must not link the agent"},
	{"csi", []string{"host", "cmd", "sdk"}, "the CSI packages are below the agent, and apart from the plugin side"},
	{"csi/plugins", []string{"csi/volumes"}, "inside csi: volumes → plugins → csi"},
	{"csi/internal", []string{"csi/volumes", "csi/plugins"}, "the csi packages' test helpers stay below them"},
	{"dynamic", []string{"host", "cmd", "csi", "sdk"}, "the registry is the bottom layer"},
	{"plugins", []string{"host", "cmd"}, "example plugins are written with the sdk only"},
	{"internal/beneath", []string{"host", "csi", "cmd"}, "shared helpers are below everything"},
	{"internal/reconcile", []string{"host", "csi", "cmd"}, "shared helpers are below everything"},
}

// TestLayering walks every package's transitive imports (go list -deps)
// and fails on one that goes the wrong way, naming the chain's two ends.
// Before this test the README's rules were only prose: a stray import of
// host from csi would have built and passed.
func TestLayering(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-test=false", "-f", `{{.ImportPath}} {{join .Deps " "}}`, module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, deps := fields[0], fields[1:]
		for _, r := range rules {
			if !under(pkg, r.from) {
				continue
			}
			checked++
			for _, d := range deps {
				for _, n := range r.never {
					if under(d, n) {
						t.Errorf("%s depends on %s: %s", strings.TrimPrefix(pkg, module+"/"), strings.TrimPrefix(d, module+"/"), r.why)
					}
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d packages checked: go list's output changed?\n%s", checked, out)
	}
}

// under reports whether the import path p is the module's package rel or
// below it.
func under(p, rel string) bool {
	full := module + "/" + rel
	return p == full || strings.HasPrefix(p, full+"/")
}

// TestUnder keeps the matching exact: csi does not take in csiplugin.
func TestUnder(t *testing.T) {
	for _, c := range []struct {
		p, rel string
		want   bool
	}{
		{module + "/csi", "csi", true},
		{module + "/csi/volumes", "csi", true},
		{module + "/csiplugin", "csi", false},
		{module + "/host/csi", "csi", false},
	} {
		if got := under(c.p, c.rel); got != c.want {
			t.Errorf("under(%q, %q) = %v", c.p, c.rel, got)
		}
	}
}
