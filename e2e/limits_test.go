package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/internal/badjobs"
)

// TestHostileJobsRefused sends issue 26's jobs to a real agent: the 400 KB
// file of nested parentheses (which ended the agent with "fatal error:
// stack overflow"), the 20,000 groups of count 1000 as a file and as a JSON
// job (20 million allocations, which it accepted). Each is a 400 naming
// where it crosses a limit; the agent is still running afterwards, answers,
// and runs a job.
func TestHostileJobsRefused(t *testing.T) {
	e := newEnv(t, "")
	a := e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// Written out with only the fields it needs, the JSON job fits the
	// API's 4 MiB body limit.
	var wide strings.Builder
	wide.WriteString(`{"ID": "wide", "TaskGroups": [`)
	for i := range badjobs.IssueGroups {
		if i > 0 {
			wide.WriteString(",")
		}
		fmt.Fprintf(&wide, `{"Name": "g%d", "Count": %d, "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"Command": "/bin/true"}}]}`,
			i, badjobs.IssueCount)
	}
	wide.WriteString("]}")

	for _, c := range []struct {
		name   string
		submit func() error
		field  string
		// where is the diagnostic's Range, or for a JSON job its Field.
		where, summary string
	}{
		{"nested parentheses", func() error {
			_, err := a.client.RegisterJobSource(ctx, "nested.hcl", badjobs.NestedParens(badjobs.IssueNesting))
			return err
		}, "Source", "nested.hcl:3:75", "Nesting too deep"},
		{"20,000 groups as a file", func() error {
			_, err := a.client.RegisterJobSource(ctx, "wide.hcl", badjobs.ManyGroups(badjobs.IssueGroups, badjobs.IssueCount))
			return err
		}, "Source", "wide.hcl:58783:14", "Job file too large"},
		{"20,000 groups as JSON", func() error {
			_, err := a.client.RegisterJob(ctx, json.RawMessage(wide.String()))
			return err
		}, "Job.TaskGroups[100]", "Job.TaskGroups[100]", "Too many groups"},
	} {
		start := time.Now()
		err := c.submit()
		took := time.Since(start)
		var se *api.StatusError
		if !errors.As(err, &se) || se.StatusCode != 400 || se.Field != c.field {
			t.Fatalf("%s: %.500v, want a 400 on %s\nagent output:\n%s", c.name, err, c.field, tail(a.output(), 4000))
		}
		if len(se.Diagnostics) != 1 {
			t.Fatalf("%s: %d diagnostics, want one: %+v", c.name, len(se.Diagnostics), se.Diagnostics)
		}
		d := se.Diagnostics[0]
		if where := d.Range + d.Field; d.Summary != c.summary || where != c.where {
			t.Errorf("%s: %q at %q, want %q at %q", c.name, d.Summary, where, c.summary, c.where)
		}
		if !strings.Contains(se.Error(), c.where) {
			t.Errorf("%s: the error does not say where: %.500s", c.name, se.Error())
		}
		t.Logf("%s: refused in %v", c.name, took)
	}

	select {
	case <-a.exited:
		t.Fatalf("the agent exited (%v):\n%s", a.exitErr, tail(a.output(), 4000))
	default:
	}
	if ok, err := a.client.Health(ctx); err != nil || !ok {
		t.Fatalf("health after the refusals: %v %v", ok, err)
	}
	if jobs, err := a.client.Jobs(ctx); err != nil || len(jobs) != 0 {
		t.Errorf("jobs after the refusals: %v, %v; want none", jobs, err)
	}
	ids := a.runJob("after", jobHCL("after", "", shTask("t", e.markerFor("t"), sleeper)))
	a.waitAlloc(ids[0], "running", func(al *api.Allocation) bool { return al.ClientStatus == "running" })
}
