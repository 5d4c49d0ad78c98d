package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/pluginhost/pluginhost/internal/testbin"
)

// Binaries built once for the package's tests: the real mockcsi plugin and
// the real log shipper.
var mockcsiBin, logmonBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	defer testbin.Cleanup()
	var err error
	if mockcsiBin, err = testbin.Path("mockcsi"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "supervisor-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	logmonBin = filepath.Join(dir, "logmon")
	if out, err := exec.Command("go", "build", "-o", logmonBin, "../logmon/internal/logmonbin").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build logmon: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}
