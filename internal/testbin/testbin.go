// Package testbin builds the project's binaries once per test process, so
// that end-to-end tests run the real pluginhost and mockcsi executables.
//
// `make test` builds them into ./bin first and passes that directory in
// PLUGINHOST_TEST_BIN_DIR; a bare `go test` builds them into a temporary
// directory on first use.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
)

// EnvBinDir names a directory holding prebuilt binaries.
const EnvBinDir = "PLUGINHOST_TEST_BIN_DIR"

// Packages maps a binary name to its import path.
var packages = map[string]string{
	"pluginhost":        "./cmd/pluginhost",
	"pluginhost-logmon": "./cmd/pluginhost-logmon",
	"pluginhost-nsexec": "./cmd/pluginhost-nsexec",
	"mockcsi":           "./plugins/mockcsi",
	"kv":                "./plugins/kv",
	// go-plugin's own examples, built from the module cache: real
	// go-plugin binaries nobody here wrote.
	"plugin-go-grpc":   "github.com/hashicorp/go-plugin/examples/grpc/plugin-go-grpc",
	"plugin-go-netrpc": "github.com/hashicorp/go-plugin/examples/grpc/plugin-go-netrpc",
	// The rest of go-plugin's examples directory, under the names their
	// READMEs build them as.
	"greeter":         "github.com/hashicorp/go-plugin/examples/basic/plugin",
	"counter-go-grpc": "github.com/hashicorp/go-plugin/examples/bidirectional/plugin-go-grpc",
	"kv-plugin":       "github.com/hashicorp/go-plugin/examples/negotiated/plugin-go",
	"streamer":        "github.com/hashicorp/go-plugin/examples/streaming/plugin",
	// Our consumer of the bidirectional example.
	"counter": "./examples/go-plugin/counter",
	// A stand-in for go-plugin's Python example: gRPC on loopback TCP.
	"tcpkv": "./internal/tcpkv",
}

type result struct {
	path string
	err  error
}

var (
	mu    sync.Mutex
	built = map[string]*result{}
	tmp   string
)

// Path returns the path of the named binary ("pluginhost" or "mockcsi"),
// building it if needed.
func Path(name string) (string, error) {
	pkg, ok := packages[name]
	if !ok {
		return "", fmt.Errorf("testbin: unknown binary %q", name)
	}
	if dir := os.Getenv(EnvBinDir); dir != "" {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("testbin: %s: %w (run make build)", p, err)
		}
		return p, nil
	}
	mu.Lock()
	defer mu.Unlock()
	if r, ok := built[name]; ok {
		return r.path, r.err
	}
	r := &result{}
	built[name] = r
	if tmp == "" {
		d, err := os.MkdirTemp("", "pluginhost-testbin-")
		if err != nil {
			r.err = fmt.Errorf("testbin: %w", err)
			return "", r.err
		}
		tmp = d
	}
	r.path = filepath.Join(tmp, name)
	cmd := exec.Command("go", "build", "-o", r.path, pkg)
	cmd.Dir = moduleRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		r.err = fmt.Errorf("testbin: go build %s: %w\n%s", pkg, err, out)
	}
	return r.path, r.err
}

// Cleanup removes the binaries Path built (never prebuilt ones). Without
// it every test process that builds would leave a directory of binaries
// in $TMPDIR.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if tmp != "" {
		_ = os.RemoveAll(tmp)
		tmp = ""
		built = map[string]*result{}
	}
}

// Main runs a package's tests and then Cleanup. A package whose tests call
// Path has TestMain(m) { os.Exit(testbin.Main(m)) }.
func Main(m interface{ Run() int }) int {
	defer Cleanup()
	return m.Run()
}

// MustPath is Path for tests: it fails the test on error.
func MustPath(t interface {
	Helper()
	Fatalf(string, ...any)
}, name string) string {
	t.Helper()
	p, err := Path(name)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return p
}

func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}
