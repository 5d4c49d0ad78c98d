package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// osc52 writes "pwned" to the terminal's clipboard when printed raw.
const osc52 = "\x1b]52;c;cHduZWQ=\a"

// Issue 26 §9, end to end: a CSI plugin whose node ID carries
// escape sequences, and a go_plugin binary whose handshake line does. The
// CLI's plugin status (list and detail), alloc status and the API's event
// messages show them as text. Before, the sequences reached the
// operator's terminal and wrote to the clipboard.
func TestHostileStringsAreText(t *testing.T) {
	e := newEnv(t, csiConfig)
	a := e.start()
	w := a.watchPlugins()
	tk := csiTask(t, "raw_exec", "p", e.markerFor("evil"), "evil", "30s")
	// mockcsi refuses a driver name that is not a CSI name; the node ID
	// is free text.
	tk.args = []string{"--endpoint=${CSI_ENDPOINT}", "--node-id=node" + osc52}
	alloc := a.runJob("evil", jobHCL("evil", restartPolicy, tk))[0]
	w.waitHealthy(alloc)

	script := filepath.Join(e.root, "junk.sh")
	writeFile(t, script, "#!/bin/sh\nprintf 'hello\\033]52;c;cHduZWQ=\\007\\033[2J\\n'\nsleep 30\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	junk := fmt.Sprintf("job \"junk\" {\n  group \"g\" {\n    restart {\n      attempts = 0\n      mode = \"fail\"\n    }\n    task \"j\" {\n      driver = \"go_plugin\"\n      config {\n        command = %q\n      }\n    }\n  }\n}\n", script)
	resp, err := a.client.RegisterJobSource(context.Background(), "junk.hcl", []byte(junk))
	if err != nil {
		t.Fatal(err)
	}
	var failure string
	a.mustWait("the junk plugin's driver failure", 60*time.Second, func(ctx context.Context) (bool, error) {
		al, err := a.client.Allocation(ctx, resp.AllocIDs[0])
		if err != nil {
			return false, err
		}
		for _, ts := range al.TaskStates {
			for _, ev := range ts.Events {
				if ev.Type == "Driver Failure" {
					failure = ev.DisplayMessage
					return true, nil
				}
			}
		}
		return false, nil
	}, api.TopicTask)
	if strings.ContainsRune(failure, 0x1b) || !strings.Contains(failure, `hello\x1b]52;c;cHduZWQ=\a`) {
		t.Errorf("the Driver Failure event holds the handshake line raw: %q", failure)
	}

	for _, args := range [][]string{{"plugin", "status"}, {"plugin", "status", "evil"}, {"alloc", "status", resp.AllocIDs[0]}} {
		r := e.cli(args...)
		out := r.stdout + r.stderr
		if strings.ContainsAny(out, "\x1b\a") {
			t.Errorf("pluginhost %v printed raw escape sequences:\n%q", args, out)
		}
		if len(args) == 3 && args[0] == "plugin" && !strings.Contains(out, `\x1b]52;c;cHduZWQ=\a`) {
			t.Errorf("pluginhost %v does not show the plugin's answer as text:\n%s", args, out)
		}
	}
}
