package driver

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/pluginhost/pluginhost/internal/testbin"
)

// Binaries built once for the package's tests.
var testTask, testPlugin, testNsexec, tlsPlugin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "drvbin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	defer testbin.Cleanup()
	for name, pkg := range map[string]string{
		"testtask": "./internal/testtask", "testplugin": "./internal/testplugin", "nsexec": "../../cmd/pluginhost-nsexec",
		"tlsplugin": "./internal/tlsplugin",
	} {
		out := filepath.Join(dir, name)
		if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", pkg, err, b)
			return 1
		}
	}
	testTask, testPlugin = filepath.Join(dir, "testtask"), filepath.Join(dir, "testplugin")
	testNsexec = filepath.Join(dir, "nsexec")
	tlsPlugin = filepath.Join(dir, "tlsplugin")
	return m.Run()
}
