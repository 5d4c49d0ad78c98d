package taskrunner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Binaries built once for the package's tests: a task, a go-plugin plugin
// and the log shipper.
var testTask, testPlugin, logmonBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "trbin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bins := map[string]string{
		"testtask":   "../driver/internal/testtask",
		"testplugin": "../driver/internal/testplugin",
		"logmon":     "../logmon/internal/logmonbin",
		"testagent":  "./internal/testagent",
	}
	for name, pkg := range bins {
		if b, err := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", pkg, err, b)
			return 1
		}
	}
	testTask, testPlugin, logmonBin = filepath.Join(dir, "testtask"), filepath.Join(dir, "testplugin"), filepath.Join(dir, "logmon")
	return m.Run()
}
