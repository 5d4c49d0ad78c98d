// Package testbins builds the sdk's test binaries (testplugin, bareplugin,
// testhost, minplugin) for a test binary's TestMain. They are not in internal/testbin
// because `make test` expects everything there prebuilt in ./bin, and these
// exist only for the sdk's own tests.
package testbins

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// Bins are the paths of the built binaries.
type Bins struct {
	Dir        string
	TestPlugin string
	BarePlugin string
	TestHost   string
	MinPlugin  string
}

// Build compiles the binaries into a new temporary directory; the caller
// removes Dir when done.
func Build() (*Bins, error) {
	dir, err := os.MkdirTemp("", "sdk-testbins-")
	if err != nil {
		return nil, fmt.Errorf("testbins: %w", err)
	}
	_, file, _, _ := runtime.Caller(0)
	internalDir := filepath.Join(filepath.Dir(file), "..")
	cmd := exec.Command("go", "build", "-tags="+buildTags, "-o", dir+string(filepath.Separator),
		"./testplugin", "./bareplugin", "./testhost", "./minplugin")
	cmd.Dir = internalDir
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("testbins: go build: %w\n%s", err, out)
	}
	return &Bins{
		Dir:        dir,
		TestPlugin: filepath.Join(dir, "testplugin"),
		BarePlugin: filepath.Join(dir, "bareplugin"),
		TestHost:   filepath.Join(dir, "testhost"),
		MinPlugin:  filepath.Join(dir, "minplugin"),
	}, nil
}

// Main builds the binaries into *bins, runs the package's tests and removes
// the binaries: TestMain(m) { os.Exit(testbins.Main(m, &bins)) }.
func Main(m interface{ Run() int }, bins **Bins) int {
	b, err := Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(b.Dir)
	*bins = b
	return m.Run()
}
