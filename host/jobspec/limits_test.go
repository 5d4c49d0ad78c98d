package jobspec

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict"
	"github.com/pluginhost/pluginhost/internal/badjobs"
)

// groupsOfTasks is a job of the given number of groups, each of the given
// count and number of tasks. Group i starts on line 2+(3+4*tasks)*i.
func groupsOfTasks(groups, tasks, count int) []byte {
	var b strings.Builder
	b.WriteString("job \"j\" {\n")
	for i := range groups {
		fmt.Fprintf(&b, "  group \"g%d\" {\n    count = %d\n", i, count)
		for k := range tasks {
			fmt.Fprintf(&b, "    task \"t%d\" {\n      driver = \"raw_exec\"\n      config { command = \"/bin/true\" }\n    }\n", k)
		}
		b.WriteString("  }\n")
	}
	b.WriteString("}\n")
	return []byte(b.String())
}

// refusedAt checks that err is exactly one located diagnostic.
func refusedAt(t *testing.T, err error, want string) {
	t.Helper()
	var de *hclstrict.DiagnosticsError
	if !errors.As(err, &de) {
		t.Fatalf("want %q, got %T: %v", want, err, err)
	}
	if len(de.Diags) != 1 {
		t.Errorf("want only %q, got %d diagnostics:\n%v", want, len(de.Diags), err)
	}
	d := de.Diags[0]
	if got := fmt.Sprintf("%s:%d:%d: %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, d.Summary); got != want {
		t.Errorf("got %q, want %q:\n%v", got, want, err)
	}
}

// TestIssueFilesRefused: the two files of issue 26 are refused, each with
// one located error, and the nested one is quoted around its error, not
// in full.
func TestIssueFilesRefused(t *testing.T) {
	_, err := Parse(badjobs.NestedParens(badjobs.IssueNesting), "x.hcl")
	// The group body is 2 deep; the 63rd parenthesis makes 65.
	refusedAt(t, err, "x.hcl:3:75: Nesting too deep")
	if err != nil && len(err.Error()) > 1000 {
		t.Errorf("a %d-byte error for one problem", len(err.Error()))
	}
	_, err = Parse(badjobs.ManyGroups(badjobs.IssueGroups, badjobs.IssueCount), "wide.hcl")
	refusedAt(t, err, "wide.hcl:58783:14: Job file too large")
}

func TestJobSizeLimits(t *testing.T) {
	for _, c := range []struct {
		name string
		src  []byte
		want string // "" for a job that validates
	}{
		{"groups at the limit", groupsOfTasks(MaxGroups, 1, 10), ""},
		{"a group too many", groupsOfTasks(MaxGroups+1, 1, 1), "j.hcl:702:3: Too many groups"},
		{"allocations at the limit", groupsOfTasks(2, 1, MaxAllocs/2), ""},
		{"allocations over the limit", groupsOfTasks(2, 1, MaxAllocs), "j.hcl:10:13: Too many allocations"},
		{"a count out of range is not too many allocations too", groupsOfTasks(1, 1, MaxAllocs+1), "j.hcl:3:13: Value out of range"},
		{"tasks in a group at the limit", groupsOfTasks(1, MaxTasksPerGroup, 1), ""},
		// The 101st task block starts on line 2 + 2 + 4*100.
		{"a task too many in a group", groupsOfTasks(1, MaxTasksPerGroup+1, 1), "j.hcl:404:5: Too many tasks"},
		{"tasks at the limit", groupsOfTasks(4, 2, MaxTasks/8), ""},
		{"tasks over the limit", groupsOfTasks(1, 3, MaxTasks/2), "j.hcl:2:3: Too many tasks"},
		// 11 tasks count once per group of count 0: the 91st group
		// (line 2 + 47*90) takes the job to 1001.
		{"tasks of groups of count 0 count once", groupsOfTasks(MaxGroups, 11, 0), "j.hcl:4232:3: Too many tasks"},
	} {
		t.Run(c.name, func(t *testing.T) {
			job, err := Parse(c.src, "j.hcl")
			if c.want == "" {
				if err != nil || job == nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			refusedAt(t, err, c.want)
		})
	}
}

// TestJSONJobSizeLimits: a job submitted as JSON meets the same limits in
// Validate, which stops at a job of too many groups without looking at
// them.
func TestJSONJobSizeLimits(t *testing.T) {
	base, err := Parse(groupsOfTasks(1, 1, badjobs.IssueCount), "j.hcl")
	if err != nil {
		t.Fatal(err)
	}
	group := func(name string, count, tasks int) *TaskGroup {
		g := *base.TaskGroups[0]
		g.Name, g.Count = name, count
		g.Tasks = nil
		for k := range tasks {
			task := *base.TaskGroups[0].Tasks[0]
			task.Name = fmt.Sprintf("t%d", k)
			g.Tasks = append(g.Tasks, &task)
		}
		return &g
	}
	wide := *base
	wide.TaskGroups = nil
	for i := range badjobs.IssueGroups {
		wide.TaskGroups = append(wide.TaskGroups, group(fmt.Sprintf("g%d", i), badjobs.IssueCount, 1))
	}
	allocs := *base
	allocs.TaskGroups = []*TaskGroup{group("a", MaxAllocs, 1), group("b", 1, 1)}
	tasks := *base
	tasks.TaskGroups = []*TaskGroup{group("a", 1, MaxTasksPerGroup+1)}
	for _, c := range []struct {
		name         string
		job          *Job
		field, summ  string
		detailPrefix string
	}{
		{"the issue's 20,000 groups", &wide, "TaskGroups[100]", "Too many groups", "A job may have at most 100 groups; this one has 20000"},
		{"allocations", &allocs, "TaskGroups[1].Count", "Too many allocations", "A job may run at most 1000 allocations"},
		{"tasks in a group", &tasks, "TaskGroups[0].Tasks[100]", "Too many tasks", "A group may have at most 100 tasks"},
	} {
		err := Validate(c.job)
		var ve *ValidationError
		if !errors.As(err, &ve) || len(ve.Problems) != 1 {
			t.Errorf("%s: want one problem, got %v", c.name, err)
			continue
		}
		p := ve.Problems[0]
		if p.Field != c.field || p.Summary != c.summ || !strings.HasPrefix(p.Detail, c.detailPrefix) {
			t.Errorf("%s: got %s: %s: %s", c.name, p.Field, p.Summary, p.Detail)
		}
	}
}
