package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// cliResult is one run of the CLI.
type cliResult struct {
	stdout, stderr string
	code           int
}

// cli runs the pluginhost CLI against the env's agent.
func (e *env) cli(args ...string) cliResult {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.bin, args...)
	cmd.Dir = e.root
	cmd.Env = append(os.Environ(), api.EnvAddr+"="+e.addr())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := cliResult{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	case err != nil:
		e.t.Fatalf("pluginhost %v: %v", args, err)
	}
	return res
}

// badJob has a task without config (line 3) and an unknown argument at
// line 5, column 7.
const badJob = `job "bad" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      bogus  = 1
    }
  }
}
`

// TestCLI drives the CLI binary against a real agent: validation and
// submission errors with file:line:col, job run, status views as parseable
// JSON, logs, the event stream and job stop.
func TestCLI(t *testing.T) {
	e := newEnv(t, "")
	a := e.start()

	// The event stream is started first so that it is surely subscribed
	// by the time the job is stopped at the end.
	evCtx, evCancel := context.WithCancel(context.Background())
	defer evCancel()
	evCmd := exec.CommandContext(evCtx, e.bin, "events", "-json", "-topic", api.TopicTask)
	evCmd.Env = append(os.Environ(), api.EnvAddr+"="+e.addr())
	evOut, err := evCmd.StdoutPipe()
	if err != nil {
		t.Fatalf("events stdout: %v", err)
	}
	if err := evCmd.Start(); err != nil {
		t.Fatalf("start events: %v", err)
	}
	t.Cleanup(func() {
		evCancel()
		_ = evCmd.Wait()
	})

	bad := filepath.Join(e.root, "bad.hcl")
	good := filepath.Join(e.root, "good.hcl")
	m := e.markerFor("cli")
	writeFile(t, bad, badJob)
	writeFile(t, good, jobHCL("cli", restartPolicy, shTask("t", m, `echo hello-e2e; exec sleep 1000000`)))

	t.Run("validate", func(t *testing.T) {
		r := e.cli("job", "validate", bad)
		if r.code == 0 || !strings.Contains(r.stderr+r.stdout, "bad.hcl:5:7") || !strings.Contains(r.stderr+r.stdout, "bad.hcl:3:5") {
			t.Fatalf("job validate of a bad file: exit %d, want non-zero with bad.hcl:3:5 and bad.hcl:5:7:\n%s%s", r.code, r.stdout, r.stderr)
		}
		if r := e.cli("job", "validate", good); r.code != 0 {
			t.Fatalf("job validate of a good file: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("run bad file", func(t *testing.T) {
		r := e.cli("job", "run", bad)
		if r.code == 0 || !strings.Contains(r.stderr, "bad.hcl:5:7") {
			t.Fatalf("job run of a bad file: exit %d, want non-zero with bad.hcl:5:7 on stderr:\n%s%s", r.code, r.stdout, r.stderr)
		}
		jobs, err := a.client.Jobs(context.Background())
		if err != nil || len(jobs) != 0 {
			t.Fatalf("after a rejected job run: jobs %v, err %v; want none", jobs, err)
		}
	})

	r := e.cli("job", "run", good)
	if r.code != 0 {
		t.Fatalf("job run: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	ids := a.jobAllocIDs("cli")
	if len(ids) != 1 || !strings.Contains(r.stdout, short(ids[0])) {
		t.Fatalf("job run output does not name the allocation %v:\n%s", ids, r.stdout)
	}
	alloc := ids[0]

	t.Run("json", func(t *testing.T) {
		var st struct{ Job *api.Job }
		mustJSON(t, e.cli("job", "status", "-json", "cli"), &st)
		if st.Job == nil || st.Job.ID != "cli" || st.Job.Status != api.JobStatusRunning {
			t.Fatalf("job status -json: job %+v, want cli running", st.Job)
		}
		var list []map[string]any
		mustJSON(t, e.cli("job", "status", "-json"), &list)
		if len(list) != 1 {
			t.Fatalf("job status -json lists %d entries, want 1", len(list))
		}
		var al api.Allocation
		mustJSON(t, e.cli("alloc", "status", "-json", short(alloc)), &al)
		if al.ID != alloc || al.TaskStates["t"] == nil || al.TaskStates["t"].State != api.TaskStateRunning {
			t.Fatalf("alloc status -json: %+v", al)
		}
		var plugins []map[string]any
		mustJSON(t, e.cli("plugin", "status", "-json"), &plugins)
	})

	t.Run("logs", func(t *testing.T) {
		al, err := a.client.Allocation(context.Background(), alloc)
		if err != nil {
			t.Fatal(err)
		}
		// The line reaches the file through the log shipper; nothing
		// announces that, so this polls the file.
		logFile := filepath.Join(al.AllocDir, "alloc", "logs", "t.stdout.0")
		deadline := time.Now().Add(10 * time.Second)
		for b, _ := os.ReadFile(logFile); !bytes.Contains(b, []byte("hello-e2e")); b, _ = os.ReadFile(logFile) {
			if time.Now().After(deadline) {
				t.Fatalf("%s never got the task's line", logFile)
			}
			time.Sleep(10 * time.Millisecond)
		}
		r := e.cli("alloc", "logs", short(alloc))
		if r.code != 0 || !strings.Contains(r.stdout, "hello-e2e") {
			t.Fatalf("alloc logs: exit %d, want the task's line:\n%s%s", r.code, r.stdout, r.stderr)
		}
		if r := e.cli("alloc", "logs", "-stderr", short(alloc), "t"); r.code != 0 {
			t.Fatalf("alloc logs -stderr: exit %d:\n%s", r.code, r.stderr)
		}
	})

	if r := e.cli("job", "stop", "cli"); r.code != 0 {
		t.Fatalf("job stop: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	waitGone(t, m, 3*time.Second)

	// `job stop` produced Killing and Killed; every line must be JSON.
	sc := bufio.NewScanner(evOut)
	timer := time.AfterFunc(30*time.Second, func() { _ = evCmd.Process.Signal(syscall.SIGKILL) })
	defer timer.Stop()
	for {
		if !sc.Scan() {
			t.Fatalf("events -json ended before the Killed event: %v", sc.Err())
		}
		var ev api.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("events -json line %q: %v", sc.Text(), err)
		}
		if ev.Payload.AllocID == alloc && ev.Payload.TaskEvent != nil && ev.Payload.TaskEvent.Type == api.TaskKilled {
			break
		}
	}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

// mustJSON asserts a successful CLI run whose stdout decodes into v.
func mustJSON(t testing.TB, r cliResult, v any) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("output is not the expected JSON (%v):\n%s", err, r.stdout)
	}
}

// TestShellCompletion: with completion installed, the shell asks the
// binary (COMP_LINE) and gets subcommands, flags, and the IDs the agent
// knows.
func TestShellCompletion(t *testing.T) {
	e := newEnv(t, "")
	a := e.start()
	a.runJob("compl", jobHCL("compl", restartPolicy, shTask("t", e.markerFor("t"), sleeper)))
	complete := func(line string) string {
		cmd := exec.Command(e.bin)
		cmd.Env = append(os.Environ(), api.EnvAddr+"="+e.addr(), "COMP_LINE="+line)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("completing %q: %v", line, err)
		}
		return string(out)
	}
	for line, want := range map[string]string{
		"pluginhost job st":      "status",
		"pluginhost job status ": "compl",
		"pluginhost job stop -":  "-purge",
		"pluginhost volume sn":   "snapshot",
	} {
		if got := complete(line); !strings.Contains(got, want) {
			t.Errorf("completing %q: %q, want %q among them", line, got, want)
		}
	}
}
