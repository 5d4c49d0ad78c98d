package apiserver

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/internal/badjobs"
)

func sourceBody(t *testing.T, filename string, src []byte) string {
	t.Helper()
	b, err := json.Marshal(jobRegisterRequest{Source: string(src), Filename: filename})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRegisterJobLimits: issue 26's files, as job files and as a JSON job,
// are refused with a 400 naming where the limit is crossed, never reach
// the backend, and the server answers the next request.
func TestRegisterJobLimits(t *testing.T) {
	ts := startServer(t, nil)
	// Written out, with only the fields it needs, the JSON job fits the
	// body limit (2 MB).
	var wide strings.Builder
	wide.WriteString(`{"Job": {"ID": "wide", "TaskGroups": [`)
	for i := range badjobs.IssueGroups {
		if i > 0 {
			wide.WriteString(",")
		}
		fmt.Fprintf(&wide, `{"Name": "g%d", "Count": %d, "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"Command": "/bin/true"}}]}`,
			i, badjobs.IssueCount)
	}
	wide.WriteString("]}}")
	for _, c := range []struct {
		name, body, field, summary, rng string
	}{
		{"nested parentheses", sourceBody(t, "x.hcl", badjobs.NestedParens(badjobs.IssueNesting)),
			"Source", "Nesting too deep", "x.hcl:3:75"},
		{"20,000 groups as a file", sourceBody(t, "wide.hcl", badjobs.ManyGroups(badjobs.IssueGroups, badjobs.IssueCount)),
			"Source", "Job file too large", "wide.hcl:58783:14"},
		{"20,000 groups as JSON", wide.String(), "Job.TaskGroups[100]", "Too many groups", ""},
	} {
		status, er := ts.rawDo(t, "POST", "/v1/jobs", c.body)
		if status != 400 || er.Field != c.field || !strings.Contains(er.Error, c.summary) {
			t.Errorf("%s: status %d field %q error %.300q; want 400 on %s with %q", c.name, status, er.Field, er.Error, c.field, c.summary)
			continue
		}
		if len(er.Diagnostics) != 1 || er.Diagnostics[0].Summary != c.summary || er.Diagnostics[0].Range != c.rng {
			t.Errorf("%s: diagnostics %+v, want one %q at %q", c.name, er.Diagnostics, c.summary, c.rng)
		}
		if len(er.Error) > 2000 {
			t.Errorf("%s: a %d-byte error for one problem", c.name, len(er.Error))
		}
	}
	if len(ts.be.ran) != 0 {
		t.Errorf("refused jobs reached the backend: %d", len(ts.be.ran))
	}
	if status, _ := ts.rawDo(t, "POST", "/v1/jobs", jobBody(t, validJob())); status != 200 {
		t.Errorf("a valid job after the refusals: status %d", status)
	}
}

// TestJSONNestingIsBounded: a JSON body is decoded by encoding/json, whose
// scanner refuses nesting past 10,000 levels before anything is decoded,
// and whose decoder only recurses that deep into untyped values, which
// the request types do not have. Bodies at that depth and far past it are
// a 400, in every field a job has room for.
func TestJSONNestingIsBounded(t *testing.T) {
	ts := startServer(t, nil)
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, c := range []struct{ name, body string }{
		{"at the decoder's limit, in a string field", `{"Source": ` + deep(10_000) + `}`},
		{"past it, in a string field", `{"Source": ` + deep(1_000_000) + `}`},
		{"at the decoder's limit, in a map of the job", `{"Job": {"ID": "x", "Meta": {"k": ` + deep(10_000) + `}}}`},
		{"past it, in a list of the job", `{"Job": {"ID": "x", "TaskGroups": ` + deep(1_000_000) + `}}`},
		{"objects past it", strings.Repeat(`{"Job": `, 200_000) + strings.Repeat("}", 200_000)},
	} {
		if status, er := ts.rawDo(t, "POST", "/v1/jobs", c.body); status != 400 {
			t.Errorf("%s: status %d %+v, want 400", c.name, status, er)
		}
	}
	if status, _ := ts.rawDo(t, "POST", "/v1/jobs", jobBody(t, validJob())); status != 200 {
		t.Errorf("a valid job after the refusals: status %d", status)
	}
}

// TestRegisterJobSizeLimitsJSON: the per-job counts apply to JSON jobs too,
// named by field.
func TestRegisterJobSizeLimitsJSON(t *testing.T) {
	ts := startServer(t, nil)
	second := *validJob().TaskGroups[0]
	second.Name = "h"
	for _, c := range []struct {
		name  string
		mod   func(*jobspec.Job)
		field string
		summ  string
	}{
		{"allocations", func(j *jobspec.Job) {
			j.TaskGroups[0].Count = jobspec.MaxAllocs
			j.TaskGroups = append(j.TaskGroups, &second)
		}, "Job.TaskGroups[1].Count", "Too many allocations"},
		{"tasks", func(j *jobspec.Job) {
			task := j.TaskGroups[0].Tasks[0]
			for k := range 2 {
				other := *task
				other.Name = fmt.Sprintf("t%d", k)
				j.TaskGroups[0].Tasks = append(j.TaskGroups[0].Tasks, &other)
			}
			j.TaskGroups[0].Count = jobspec.MaxTasks / 2
		}, "Job.TaskGroups[0]", "Too many tasks"},
	} {
		job := validJob()
		c.mod(job)
		status, er := ts.rawDo(t, "POST", "/v1/jobs", jobBody(t, job))
		if status != 400 || er.Field != c.field || !strings.Contains(er.Error, c.summ) {
			t.Errorf("%s: status %d field %q error %q; want 400 on %s with %q", c.name, status, er.Field, er.Error, c.field, c.summ)
		}
	}
}
