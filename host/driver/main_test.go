package driver

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Binaries built once for the package's tests.
var testTask, testPlugin, testNsexec string

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
	for name, pkg := range map[string]string{
		"testtask": "./internal/testtask", "testplugin": "./internal/testplugin", "nsexec": "../../cmd/pluginhost-nsexec",
	} {
		out := filepath.Join(dir, name)
		if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", pkg, err, b)
			return 1
		}
	}
	testTask, testPlugin = filepath.Join(dir, "testtask"), filepath.Join(dir, "testplugin")
	testNsexec = filepath.Join(dir, "nsexec")
	return m.Run()
}
