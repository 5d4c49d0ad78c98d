package taskrunner

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/host/internal/runnertest"
)

// TestAgentKill9 runs a real agent process, SIGKILLs it, and restores its
// allocation here. The tasks are then nobody's children but init's: exits
// can only be seen through the pidfd, and their exit codes are gone.
func TestAgentKill9(t *testing.T) {
	dataDir := t.TempDir()
	agentBin := filepath.Join(filepath.Dir(testTask), "testagent")
	cmd := exec.Command(agentBin, dataDir, logmonBin, testTask, testPlugin)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("agent did not report its allocation: %v", err)
	}
	allocID := strings.TrimSpace(line)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	b := newAgent(t, dataDir)
	states, err := b.DB.LoadAllocs()
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 1 || states[0].Alloc.ID != allocID {
		t.Fatalf("stored allocations %v, want %s", states, allocID)
	}
	recs := states[0].Tasks
	for _, task := range []string{"raw", "plugin"} {
		h := recs[task].Handle
		if h == nil {
			t.Fatalf("no handle for %s", task)
		}
		t.Cleanup(func() { _ = syscall.Kill(-h.Pid, syscall.SIGKILL) })
		if !runnertest.Alive(h.Pid, h.StartTime) {
			t.Fatalf("task %s died with the agent", task)
		}
	}
	ar, err := RestoreAllocRunner(b.Cfg, states[0])
	if err != nil {
		t.Fatal(err)
	}
	b.Runners = append(b.Runners, ar)
	ar.Run()
	b.Events.Wait(t, "raw", EventReattached, 1)
	b.Events.Wait(t, "plugin", EventReattached, 1)
	if b.Events.Count("raw", EventStarted)+b.Events.Count("plugin", EventStarted) != 0 {
		t.Fatal("a task was started a second time")
	}

	raw := recs["raw"].Handle
	if err := syscall.Kill(raw.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ev := b.Events.Wait(t, "raw", EventTerminated, 1)
	if !strings.Contains(ev.Message, "unknowable") {
		t.Fatalf("terminated %q", ev.Message)
	}
	b.Events.Wait(t, "raw", EventStarted, 1)
	handle(t, ar, "raw")

	plugin := recs["plugin"].Handle
	b.Stop(ar)
	waitGone(t, plugin.Pid)
	if _, err := driver.ProcStartTime(plugin.Pid); err == nil {
		t.Fatal("plugin still running after stop")
	}
}
