package taskrunner

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/internal/testbin"
	"github.com/pluginhost/pluginhost/sdk"
)

// agentLog is an agent's hclog output, waited on by write, not by sleep.
type agentLog struct {
	mu     sync.Mutex
	buf    strings.Builder
	notify chan struct{}
}

func (l *agentLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	close(l.notify)
	l.notify = make(chan struct{})
	return len(p), nil
}

func (l *agentLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitLine waits for a line holding every part, and returns it.
func (l *agentLog) waitLine(t *testing.T, parts ...string) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		l.mu.Lock()
		ch, got := l.notify, l.buf.String()
		l.mu.Unlock()
	lines:
		for _, line := range strings.Split(got, "\n") {
			for _, p := range parts {
				if !strings.Contains(line, p) {
					continue lines
				}
			}
			return line
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no line with %q in the agent's log:\n%s", parts, got)
		}
	}
}

func captureLog(c *Config) *agentLog {
	l := &agentLog{notify: make(chan struct{})}
	c.Logger = hclog.New(&hclog.LoggerOptions{Name: "agent", Level: hclog.Debug, Output: l})
	c.LogLevel = "debug"
	return l
}

func TestGoPluginLogReachesAgentLog(t *testing.T) {
	mockcsi, err := testbin.Path("mockcsi")
	if err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, "")
	log := captureLog(a.Cfg)
	task := &jobspec.Task{
		Name: "csi", Driver: jobspec.DriverGoPlugin,
		Config:      &jobspec.TaskConfig{Command: mockcsi},
		KillTimeout: 5 * time.Second, KillSignal: "SIGTERM",
	}
	ar := a.Run(testJob(jobspec.JobTypeService, task))
	a.Events.Wait(t, "csi", EventStarted, 1)
	h := handle(t, ar, "csi")

	env, err := os.ReadFile("/proc/" + strconv.Itoa(h.Pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	logFile := PluginLogPath(filepath.Join(ar.AllocDir(), "alloc", "logs"), "csi")
	for _, kv := range []string{sdk.EnvLogLevel + "=debug", sdk.EnvLogFile + "=" + logFile} {
		if !bytes.Contains(env, []byte(kv+"\x00")) {
			t.Errorf("plugin environment lacks %s: %q", kv, env)
		}
	}

	// Lines written before Poststart (the launch's first) are shipped too,
	// at their level, under the plugin's module and task.
	line := log.waitLine(t, "[INFO]  agent.plugin.mockcsi: starting:", "alloc_id="+ar.ID(), "task=csi", "driver=")
	log.waitLine(t, "agent.plugin.mockcsi: serving under go-plugin:", "task=csi", "protocol_version=1")
	t.Log(line)

	// An agent restart re-adopts the plugin and follows its file from the
	// end: nothing is shipped twice.
	var blog *agentLog
	b := a.restartWith(func(c *Config) { blog = captureLog(c) })
	b.Events.Wait(t, "csi", EventReattached, 1)
	b.Stop(b.Runners[0])
	waitGone(t, h.Pid)
	// The plugin's last lines (SIGTERM's "stopping") are read before the
	// follower ends.
	blog.waitLine(t, "agent.plugin.mockcsi: stopping:", "task=csi")
	if got := blog.String(); strings.Contains(got, "mockcsi: starting:") {
		t.Fatalf("the re-adopting agent shipped an old line again:\n%s", got)
	}
}
