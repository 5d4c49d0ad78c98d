package api

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// shortDir returns a temp dir short enough for unix sockets: t.TempDir()
// embeds the test name and can exceed sun_path's 107 bytes.
func shortDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "phapi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// TestClientDeps keeps the client free of server code: the packages it links
// are the standard library's, gRPC's, go-plugin's and what those need.
// Every other module is refused, and so is any package of the agent's own
// module (github.com/pluginhost/pluginhost/...): a consumer that imports
// this package must not link the HCL parser, go-cty, Prometheus, bbolt or
// the CSI spec, nor find them in its module graph.
func TestClientDeps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	// Each system links its own files (the process watch uses
	// golang.org/x/sys/windows there): every one must keep to the list.
	var pkgs []string
	for _, goos := range []string{"linux", "darwin", "windows"} {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".")
		cmd.Env = append(os.Environ(), "GOOS="+goos)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("GOOS=%s go list: %v\n%s", goos, err, out)
		}
		pkgs = append(pkgs, strings.Fields(string(out))...)
	}
	slices.Sort(pkgs)
	pkgs = slices.Compact(pkgs)
	allowed := []string{
		"github.com/pluginhost/pluginhost/api",
		"google.golang.org/grpc",
		"google.golang.org/protobuf",
		"google.golang.org/genproto/googleapis/rpc",
		"github.com/hashicorp/go-plugin",
		// go-plugin's own dependencies.
		"github.com/hashicorp/go-hclog",
		"github.com/hashicorp/yamux",
		"github.com/oklog/run",
		"github.com/fatih/color",
		"github.com/mattn/go-colorable",
		"github.com/mattn/go-isatty",
		"github.com/golang/protobuf",
		// gRPC's and go-plugin's.
		"golang.org/x/net",
		"golang.org/x/sys",
		"golang.org/x/text",
	}
	refused := []string{"github.com/hashicorp/hcl", "github.com/zclconf/go-cty", "github.com/prometheus/", "go.etcd.io/bbolt",
		"github.com/container-storage-interface/", "github.com/pluginhost/pluginhost/"}
	var n int
	for _, p := range pkgs {
		n++
		ok := false
		for _, a := range allowed {
			if p == a || strings.HasPrefix(p, a+"/") {
				ok = true
				break
			}
		}
		for _, r := range refused {
			if strings.Contains(p, r) && p != "github.com/pluginhost/pluginhost/api" {
				ok = false
			}
		}
		if !ok {
			t.Errorf("package api links %s: only the standard library, gRPC and go-plugin (and what they need) may be", p)
		}
	}
	t.Logf("%d packages outside the standard library, on linux, darwin and windows together", n)
}
