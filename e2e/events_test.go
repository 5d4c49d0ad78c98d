package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// Issue 26 §7: `pluginhost events`, a quick-start step, printed nothing on
// a quiet agent, neither a header nor what had happened. It now prints a
// header, then the agent's last events (-n, 10 by default), then follows.
func TestEventsShowsRecentHistory(t *testing.T) {
	e := newEnv(t, "")
	a := e.start()
	a.runStarted("quiet", jobHCL("quiet", restartPolicy, shTask("t", e.markerFor("quiet"), sleeper)), 1)
	// The agent is quiet now: nothing happens while the command runs.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.bin, "events", "-n", "3")
	cmd.Env = append(os.Environ(), api.EnvAddr+"="+e.addr())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(out)
	var lines []string
	for len(lines) < 4 && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) < 4 {
		t.Fatalf("events printed %q before it ended: %v", lines, sc.Err())
	}
	if !strings.HasPrefix(lines[0], "Time") {
		t.Errorf("no header: %q", lines[0])
	}
	for _, l := range lines[1:] {
		if !strings.Contains(l, "quiet") && !strings.Contains(l, "Task") && !strings.Contains(l, "Allocation") {
			t.Errorf("not one of the job's events: %q", l)
		}
	}
}
