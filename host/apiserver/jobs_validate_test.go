package apiserver

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/host/jobspec"
)

// validJob is the smallest job every rule accepts, for tests to break one
// field of.
func validJob() *jobspec.Job {
	return &jobspec.Job{ID: "web", TaskGroups: []*jobspec.TaskGroup{{
		Name: "g", Count: 1,
		Tasks: []*jobspec.Task{{Name: "t", Driver: jobspec.DriverRawExec, Config: &jobspec.TaskConfig{Command: "/bin/true"}}},
	}}}
}

func jobBody(t testing.TB, job *jobspec.Job) string {
	t.Helper()
	b, err := json.Marshal(jobRegisterRequest{Job: job})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestJSONJobValidation covers the JSON jobs the old check let through.
func TestJSONJobValidation(t *testing.T) {
	ts := startServer(t, nil)
	cases := []struct {
		name    string
		mod     func(*jobspec.Job)
		field   string
		summary string
	}{
		{"task escapes", func(j *jobspec.Job) { j.TaskGroups[0].Tasks[0].Name = "../../../escape" },
			"Job.TaskGroups[0].Tasks[0].Name", "Invalid task name"},
		{"job ID escapes", func(j *jobspec.Job) { j.ID = "../x" }, "Job.ID", "Invalid job ID"},
		{"job ID space", func(j *jobspec.Job) { j.ID = "a b" }, "Job.ID", "Invalid job ID"},
		{"group escapes", func(j *jobspec.Job) { j.TaskGroups[0].Name = ".." }, "Job.TaskGroups[0].Name", "Invalid group name"},
		{"count -5", func(j *jobspec.Job) { j.TaskGroups[0].Count = -5 }, "Job.TaskGroups[0].Count", "Value out of range"},
		{"count 1001", func(j *jobspec.Job) { j.TaskGroups[0].Count = 1001 }, "Job.TaskGroups[0].Count", "Value out of range"},
		{"restart zero interval and delay", func(j *jobspec.Job) {
			j.TaskGroups[0].Restart = &jobspec.RestartPolicy{Attempts: 2, Mode: jobspec.RestartModeFail}
		}, "Job.TaskGroups[0].Restart.Interval", "Invalid restart policy"},
		{"negative restart delay", func(j *jobspec.Job) {
			j.TaskGroups[0].Tasks[0].Restart = &jobspec.RestartPolicy{Attempts: 1, Interval: time.Minute, Delay: -time.Second, Mode: "fail"}
		}, "Job.TaskGroups[0].Tasks[0].Restart.Delay", "Invalid duration"},
		{"plugin id escapes", func(j *jobspec.Job) {
			j.TaskGroups[0].Tasks[0].CSIPluginConfig = &jobspec.TaskCSIPluginConfig{ID: "../p", Type: "node"}
		}, "Job.TaskGroups[0].Tasks[0].CSIPluginConfig.ID", "Invalid plugin id"},
		{"volume alias escapes", func(j *jobspec.Job) {
			j.TaskGroups[0].Volumes = map[string]*jobspec.VolumeRequest{"..": {Type: "csi", Source: "s",
				AccessMode: jobspec.AccessModeSingleNodeWriter, AttachmentMode: jobspec.AttachmentModeFilesystem}}
		}, `Job.TaskGroups[0].Volumes[".."].Name`, "Invalid volume alias"},
		{"env key with =", func(j *jobspec.Job) { j.TaskGroups[0].Tasks[0].Env = map[string]string{"A=B": "c"} },
			`Job.TaskGroups[0].Tasks[0].Env["A=B"]`, "Invalid env key"},
	}
	for _, c := range cases {
		job := validJob()
		c.mod(job)
		status, er := ts.rawDo(t, "POST", "/v1/jobs", jobBody(t, job))
		if status != 400 || er.Field != c.field || !strings.Contains(er.Error, c.summary) {
			t.Errorf("%s: status %d field %q error %q; want 400 on %s with %q", c.name, status, er.Field, er.Error, c.field, c.summary)
			continue
		}
		found := false
		for _, d := range er.Diagnostics {
			found = found || (d.Field == c.field && d.Summary == c.summary)
		}
		if !found {
			t.Errorf("%s: diagnostics %+v lack %s on %s", c.name, er.Diagnostics, c.summary, c.field)
		}
	}
	if len(ts.be.ran) != 0 {
		t.Errorf("invalid jobs reached the backend: %d", len(ts.be.ran))
	}

	// All problems are listed, each with its field; the error names the first.
	job := validJob()
	job.ID = "a b"
	job.TaskGroups[0].Count = 1001
	status, er := ts.rawDo(t, "POST", "/v1/jobs", jobBody(t, job))
	if status != 400 || len(er.Diagnostics) != 2 || er.Diagnostics[1].Field != "Job.TaskGroups[0].Count" ||
		!strings.HasPrefix(er.Error, "Job.ID: Invalid job ID") || !strings.Contains(er.Error, "1 more problem") {
		t.Errorf("two problems: status %d %+v", status, er)
	}

	// A job with every default left out is accepted and reaches the backend
	// with the parser's defaults.
	status, er = ts.rawDo(t, "POST", "/v1/jobs", jobBody(t, validJob()))
	if status != 200 || len(ts.be.ran) != 1 {
		t.Fatalf("valid job: status %d %+v", status, er)
	}
	got := ts.be.ran[0]
	if got.Type != jobspec.JobTypeService || got.TaskGroups[0].Tasks[0].Restart == nil ||
		got.TaskGroups[0].Tasks[0].KillSignal != jobspec.DefaultKillSignal || got.Datacenters[0] != "*" {
		t.Errorf("valid job reached the backend without defaults: %+v", got)
	}
}
