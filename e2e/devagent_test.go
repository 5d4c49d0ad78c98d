package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pluginhost/pluginhost/api"
)

// TestDevAgentRunsUserTasks: `agent -dev` makes its data dir (under $TMPDIR,
// /tmp here) so that a task with `user` reaches its directory, and removes
// it at a clean stop. Before, the dev data dir was 0700 and a raw_exec
// task as nobody failed with "fork/exec /bin/sh: permission denied",
// restarting for ever (issue 26 §4).
func TestDevAgentRunsUserTasks(t *testing.T) {
	needCgroups(t)
	e := newEnv(t, "")
	rt := filepath.Join(e.root, "rt")
	if err := os.Mkdir(rt, 0o700); err != nil {
		t.Fatal(err)
	}
	e.extraEnv = []string{"XDG_RUNTIME_DIR=" + rt, "TMPDIR="}
	e.sock = filepath.Join(rt, "pluginhost", api.DefaultSocketName)
	e.agentArgs = []string{"agent", "-dev"}
	a := e.start()
	m := regexp.MustCompile(`Data dir: +(\S+)`).FindStringSubmatch(a.output())
	if m == nil {
		t.Fatalf("the dev agent does not say where its data dir is:\n%s", a.output())
	}
	dataDir := m[1]
	if !strings.HasPrefix(dataDir, os.TempDir()) {
		t.Fatalf("dev data dir %s is not under %s", dataDir, os.TempDir())
	}
	// The cleanup's kill -9 would leave it.
	t.Cleanup(func() { _ = os.RemoveAll(dataDir) })
	e.dataDir = dataDir

	tk := shTask("t", e.markerFor("u"), `id -u > $NOMAD_ALLOC_DIR/tmp && mv $NOMAD_ALLOC_DIR/tmp $NOMAD_ALLOC_DIR/out`)
	tk.extra = "      user = \"nobody\"\n"
	alloc := a.runJob("u", jobHCL("u", noRestart, tk))[0]
	if got := e.allocFile(t, a, alloc, "out"); got != "65534\n" {
		t.Fatalf("a raw_exec task as nobody on the dev agent wrote %q", got)
	}
	a.stop(t)
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("the dev agent left its data dir: %v", err)
	}
}
