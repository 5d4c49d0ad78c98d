package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pluginhost/pluginhost/api"
)

const exampleJob = "../../examples/sleep.hcl"

// crashJob is examples/sleep.hcl under a job ID the fake agent fails.
func crashJob(t *testing.T) string {
	src, err := os.ReadFile(exampleJob)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "crash.hcl")
	if err := os.WriteFile(p, []byte(strings.Replace(string(src), `job "sleep"`, `job "crashy"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestJobRunFollowsUntilRunning(t *testing.T) {
	_, addr := startAgent(t)
	r := runCLI(t, testCtx(t), addr, "job", "run", exampleJob)
	if r.code != 0 {
		t.Fatalf("job run: code %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		`Job "sleep" submitted`,
		"Allocations created: 00000001, 00000002",
		"Monitoring 2 allocation(s)",
		`Task "sleep" (alloc "00000001"): Started: Task started by client`,
		`Allocation "00000002" status changed: "pending" -> "running"`,
		`Job "sleep": allocations 2 running`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	// Events print in the order they happened.
	if i, j := strings.Index(r.stdout, "Received"), strings.Index(r.stdout, "Started"); i < 0 || j < i {
		t.Errorf("Received should come before Started:\n%s", r.stdout)
	}
}

func TestJobRunFailedAllocationExits2(t *testing.T) {
	_, addr := startAgent(t)
	r := runCLI(t, testCtx(t), addr, "job", "run", crashJob(t))
	if r.code != 2 {
		t.Fatalf("code %d, want 2\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, `Task "sleep" (alloc "00000001"): Terminated`) ||
		!strings.Contains(r.stdout, "allocations 2 failed") {
		t.Errorf("output:\n%s", r.stdout)
	}
}

func TestJobRunDetach(t *testing.T) {
	fa, addr := startAgent(t)
	r := runCLI(t, testCtx(t), addr, "job", "run", "-detach", exampleJob)
	if r.code != 0 || strings.Contains(r.stdout, "Monitoring") || !strings.Contains(r.stdout, "Allocations created") {
		t.Fatalf("code %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if len(fa.subs) != 0 {
		t.Errorf("-detach subscribed to events")
	}
}

func TestJobRunErrors(t *testing.T) {
	_, addr := startAgent(t)
	ctx := testCtx(t)
	bad := filepath.Join(t.TempDir(), "bad.hcl")
	os.WriteFile(bad, []byte("job \"x\" {\n  typo = 1\n}\n"), 0o600)
	r := runCLI(t, ctx, addr, "job", "run", bad)
	if r.code != 1 || !strings.Contains(r.stderr, bad+":2:3: Unsupported argument") {
		t.Errorf("parse error: code %d\n%s", r.code, r.stderr)
	}
	// Once, with its source line (issue 26 §7: it came twice, the first
	// time after "Source:").
	if n := strings.Count(r.stderr, "Unsupported argument"); n != 1 || strings.Contains(r.stderr, "Source:") || !strings.Contains(r.stderr, "typo = 1") {
		t.Errorf("the diagnostic is shown %d times:\n%s", n, r.stderr)
	}
	r = runCLI(t, ctx, addr, "job", "run", "/nonexistent.hcl")
	if r.code != 1 || !strings.Contains(r.stderr, "no such file") {
		t.Errorf("missing file: code %d\n%s", r.code, r.stderr)
	}
	r = runCLI(t, ctx, addr, "job", "run")
	if r.code != 1 || !strings.Contains(r.stderr, "one argument") {
		t.Errorf("no file: code %d\n%s", r.code, r.stderr)
	}
	r = runCLI(t, ctx, addr, "job", "run", "-bogus", exampleJob)
	if r.code != 1 || !strings.Contains(r.stderr, "flag provided but not defined: -bogus") {
		t.Errorf("bad flag: code %d\n%s", r.code, r.stderr)
	}
	// No agent at the address: say so and how to point elsewhere.
	r = runCLI(t, ctx, "unix:///nonexistent/ph.sock", "job", "run", exampleJob)
	if r.code != 1 || !strings.Contains(r.stderr, "Is the agent running?") {
		t.Errorf("no agent: code %d\n%s", r.code, r.stderr)
	}
}

func TestJobStatusAndStop(t *testing.T) {
	fa, addr := startAgent(t)
	ctx := testCtx(t)
	if r := runCLI(t, ctx, addr, "job", "status"); r.code != 0 || r.stdout != "No jobs\n" {
		t.Errorf("empty status: %+v", r)
	}
	runCLI(t, ctx, addr, "job", "run", "-detach", exampleJob)

	r := runCLI(t, ctx, addr, "job", "status")
	want := "ID     Type     Status   Submit Date\nsleep  service  running  " + formatUnixNano(t0.UnixNano()) + "\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("job status:\n%q\nwant\n%q", r.stdout, want)
	}
	r = runCLI(t, ctx, addr, "job", "status", "-json")
	var jobs []*api.JobListStub
	if err := json.Unmarshal([]byte(r.stdout), &jobs); err != nil || len(jobs) != 1 || jobs[0].ID != "sleep" {
		t.Errorf("job status -json: %v\n%s", err, r.stdout)
	}

	r = runCLI(t, ctx, addr, "job", "status", "sleep")
	for _, want := range []string{"ID          = sleep", "Status      = running", "Allocations\n",
		"Summary\nTask Group  Queued  Starting  Running  Failed  Complete  Lost\nsleepers    0       0         2        0       0         0\n",
		"ID        Job ID  Version  Task Group  Desired  Status   Created   Modified",
		"00000001  sleep   0        sleepers    run      running  1h0m ago  1h0m ago"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("job status sleep lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runCLI(t, ctx, addr, "job", "status", "-json", "sleep")
	var js jobStatusJSON
	if err := json.Unmarshal([]byte(r.stdout), &js); err != nil || js.Job.ID != "sleep" || len(js.Allocations) != 2 {
		t.Errorf("job status -json sleep: %v\n%s", err, r.stdout)
	}
	// Issue 26 §7: it said `job "nope": job "nope": not found (HTTP 404)`.
	if r := runCLI(t, ctx, addr, "job", "status", "nope"); r.code != 1 || r.stderr != "No job with ID \"nope\"\n" {
		t.Errorf("unknown job: %+v", r)
	}

	if r := runCLI(t, ctx, addr, "job", "stop", "-purge", "sleep"); r.code != 0 || !strings.Contains(r.stdout, `Job "sleep" stopped and purged`) {
		t.Errorf("job stop: %+v", r)
	}
	if len(fa.stopped) != 1 || fa.stopped[0] != "sleep purge=true" {
		t.Errorf("backend saw %v", fa.stopped)
	}
	if r := runCLI(t, ctx, addr, "job", "stop", "nope"); r.code != 1 {
		t.Errorf("stop unknown job: %+v", r)
	}
}

func TestJobValidate(t *testing.T) {
	ctx := testCtx(t)
	// No agent needed: the address points nowhere.
	r := runCLI(t, ctx, "unix:///nonexistent/ph.sock", "job", "validate", exampleJob)
	if r.code != 0 || !strings.Contains(r.stdout, `Job validation successful: job "sleep"`) {
		t.Errorf("valid file: %+v", r)
	}
	vol := filepath.Join(t.TempDir(), "vol.hcl")
	os.WriteFile(vol, []byte(`job "v" {
  group "g" {
    volume "data" {
      type            = "csi"
      source          = "myvol"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
      volume_mount {
        volume      = "data"
        destination = "/srv/data"
      }
    }
  }
}
`), 0o600)
	// A go_plugin task without a plugin block: a note says what its
	// binary must be, and what a plugin of another type needs instead.
	gp := filepath.Join(t.TempDir(), "gp.hcl")
	os.WriteFile(gp, []byte(`job "kv" {
  group "g" {
    task "kv" {
      driver = "go_plugin"
      config { command = "/usr/local/bin/kv" }
    }
  }
}
`), 0o600)
	r = runCLI(t, ctx, "", "job", "validate", gp)
	if r.code != 0 || !strings.Contains(r.stdout, `Note: group "g": task "kv": without a plugin block in its config, the go_plugin binary must be an sdk CSI plugin`) ||
		!strings.Contains(r.stdout, `plugin { type = "..." name = "..." }`) {
		t.Errorf("validate of a go_plugin task without plugin block: %+v", r)
	}
	r = runCLI(t, ctx, "", "job", "validate", vol)
	if r.code != 0 || !strings.Contains(r.stdout, `Note: group "g" task "t": volume "data" is bind-mounted at /srv/data in a mount namespace of the task's own`) {
		t.Errorf("validate of a job with a volume_mount does not say how it is mounted: %+v", r)
	}
	// ... and that Nomad would refuse it: raw_exec cannot mount there.
	if !strings.Contains(r.stderr, `Warning: group "g" task "t": Nomad refuses this job ("no task supports CSI")`) ||
		!strings.Contains(r.stderr, `use driver = "exec"`) {
		t.Errorf("validate of a raw_exec job with a volume_mount does not warn that Nomad refuses it: %+v", r)
	}
	// The user a task runs as must exist on this machine.
	nouser := filepath.Join(t.TempDir(), "nouser.hcl")
	os.WriteFile(nouser, []byte(`job "u" {
  group "g" {
    task "t" {
      driver = "exec"
      user   = "no-such-user-pluginhost"
      config { command = "/bin/true" }
    }
  }
}
`), 0o600)
	r = runCLI(t, ctx, "", "job", "validate", nouser)
	if r.code != 1 || !strings.Contains(r.stderr, `TaskGroups[0].Tasks[0].User: Unknown user: job "u" group "g" task "t": user "no-such-user-pluginhost" does not exist on this host`) {
		t.Errorf("validate of a job naming an unknown user: %+v", r)
	}
	bad := filepath.Join(t.TempDir(), "bad.hcl")
	os.WriteFile(bad, []byte("job \"x\" {\n  typo = 1\n}\n"), 0o600)
	r = runCLI(t, ctx, "", "job", "validate", bad)
	if r.code != 1 || !strings.Contains(r.stderr, bad+":2:3: Unsupported argument") {
		t.Errorf("invalid file: %+v", r)
	}
}

func TestJobRunUnchanged(t *testing.T) {
	_, addr := startAgent(t)
	ctx := testCtx(t)
	if r := runCLI(t, ctx, addr, "job", "run", exampleJob); r.code != 0 {
		t.Fatalf("first run: %+v", r)
	}
	r := runCLI(t, ctx, addr, "job", "run", exampleJob)
	if r.code != 0 || !strings.Contains(r.stdout, `Job "sleep" is unchanged`) ||
		!strings.Contains(r.stdout, "allocations 2 running") || strings.Contains(r.stdout, "Monitoring") {
		t.Errorf("second run: %+v", r)
	}
}

// Issue 26 §7: a batch job whose task was OOM-killed a moment after it
// started made job run exit 0 ("allocations 1 running"). job run now waits
// for the agent's verdict on the version, and exits 2 with it.
func TestJobRunWaitsForTheVerdict(t *testing.T) {
	_, addr := startAgent(t)
	ctx := testCtx(t)
	src, err := os.ReadFile(exampleJob)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "oom.hcl")
	if err := os.WriteFile(path, []byte(strings.Replace(string(src), `job "sleep"`, `job "oomy"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, ctx, addr, "job", "run", path)
	if r.code != 2 || !strings.Contains(r.stdout+r.stderr, "OOM Killed") || !strings.Contains(r.stderr, `version 0 failed`) {
		t.Errorf("job run of a job killed after it started: %+v", r)
	}
	r = runCLI(t, ctx, addr, "job", "run", exampleJob)
	if r.code != 0 || !strings.Contains(r.stdout, "version 0 is healthy") {
		t.Errorf("job run of a healthy job: %+v", r)
	}
}
